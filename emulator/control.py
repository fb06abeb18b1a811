"""The supervisor's control socket: commands for what only the supervisor holds (the live network,
its children: `daemon.start` and `daemon.stop` of a daemon started on demand, as `twin slurm up` does).

One JSON request per connection on RUN_DIR/control.sock, one JSON reply:

    {"op": "link_down", "args": ["ib-leaf01", "ib-spine01"], "kwargs": {}}
    -> {"ok": true, "result": ...}  |  {"ok": false, "error": "no link between ..."}
    {"op": "daemon.stop", "args": ["slurm"], "kwargs": {}}
    -> {"ok": true, "result": {"name": "slurm", "pid": 4242, "stopped": true, "state": "running"}}

A Unix socket, so only local users with access to the run directory can drive the twin.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

from emulator import unix_socket
from emulator.errors import UserError

MAX_REQUEST = 1 << 20

Handler = Callable[[str, list[Any], dict[str, Any]], Any]


class ControlError(UserError, RuntimeError):
    """The supervisor refused the command (the message says why) or could not be reached."""


class ControlServer:
    def __init__(self, path: Path, handler: Handler) -> None:
        self.path = path
        self.handler = handler
        path.unlink(missing_ok=True)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        unix_socket.bind(self.sock, path)
        path.chmod(0o600)
        self.sock.listen(8)
        self.sock.setblocking(False)

    def fileno(self) -> int:
        return self.sock.fileno()

    def serve_one(self) -> None:
        """Answer one waiting connection (call when the socket is readable)."""
        try:
            conn, _ = self.sock.accept()
        except BlockingIOError:
            return
        with conn:
            conn.settimeout(5.0)
            try:
                request = json.loads(_read_all(conn))
                op, args, kwargs = request["op"], request.get("args", []), request.get("kwargs", {})
                if not isinstance(op, str) or not isinstance(args, list) or not isinstance(kwargs, dict):
                    raise ValueError("op must be a string, args a list and kwargs an object")
            except (ValueError, KeyError, TypeError, OSError) as e:
                reply: dict[str, Any] = {"ok": False, "error": f"bad control request: {e}"}
            else:
                try:
                    reply = {"ok": True, "result": self.handler(op, args, kwargs)}
                except Exception as e:   # the handler's refusal, sent back for the user to read
                    reply = {"ok": False, "error": str(e)}
            try:
                conn.sendall(json.dumps(reply).encode())
            except OSError:
                pass

    def close(self) -> None:
        self.sock.close()
        self.path.unlink(missing_ok=True)


def _read_all(conn: socket.socket) -> bytes:
    chunks, size = [], 0
    while chunk := conn.recv(65536):
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_REQUEST:
            raise ValueError("request too large")
    return b"".join(chunks)


def call(path: Path, op: str, *args: Any, timeout: float = 120.0, **kwargs: Any) -> Any:
    """Send one command to the supervisor and return its result; ControlError on refusal."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        try:
            unix_socket.connect(sock, path)
            sock.sendall(json.dumps({"op": op, "args": list(args), "kwargs": kwargs}).encode())
            sock.shutdown(socket.SHUT_WR)
            reply = json.loads(_read_all(sock))
        except (OSError, ValueError) as e:
            raise ControlError(f"cannot reach the twin's supervisor at {path}: {e}") from None
    if not reply.get("ok"):
        raise ControlError(reply.get("error", "refused"))
    return reply.get("result")
