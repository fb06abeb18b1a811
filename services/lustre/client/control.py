"""The mount's parameter socket: how `twin lustre lctl` reaches a live client (on a Lustre node, lctl
reads and writes /sys/fs/lustre and /proc/fs/lustre of the kernel client). A Unix socket next to the
mount's record (RUN/mounts/lustre-<hash>.sock), one JSON request per connection:

    {"op": "list"}                          -> {"params": {full name: value, ...}, "stats": [full name]}
    {"op": "set", "name": N, "value": V}    -> {"value": V} or {"error": errno name, "message": ...}
    {"op": "stats", "name": N}              -> {"text": the counters as lctl prints them}
    {"op": "clear", "name": N}              -> {} (the counters zeroed, as a write to llite.*.stats does)
    {"op": "mdt_param", "name": N, "value": V}  -> {} (a tunable of the MDT changed: mdd.*.atime_diff, which
                                               the mount applies before it sends a read's atime)
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
from collections.abc import Callable
from pathlib import Path

from emulator import unix_socket
from services.lustre.client.stats import Stats
from services.lustre.client.tunables import Registry
from services.lustre.errors import LustreError

log = logging.getLogger("lustre.client")


def socket_path(record: Path) -> Path:
    return record.with_suffix(".sock")


MdtParam = Callable[[str, int], None]


def serve(path: Path, registry: Registry, stats: Stats, mdt_param: MdtParam | None = None) -> threading.Thread:
    """Answer on `path` in a daemon thread, for the life of the process."""
    path.unlink(missing_ok=True)
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    unix_socket.bind(srv, path)
    os.chmod(path, 0o600)
    srv.listen(8)

    def loop() -> None:
        while True:
            conn, _ = srv.accept()
            with conn:
                try:
                    conn.sendall(json.dumps(answer(registry, stats, json.loads(_recv(conn)), mdt_param)).encode()
                                 + b"\n")
                except (OSError, ValueError) as e:
                    log.warning("lctl request: %s", e)

    t = threading.Thread(target=loop, name="lustre-lctl", daemon=True)
    t.start()
    return t


def answer(registry: Registry, stats: Stats, req: dict, mdt_param: MdtParam | None = None) -> dict:
    stats_name = f"{registry.llite}.stats"
    if req.get("op") == "mdt_param" and mdt_param is not None:
        try:
            mdt_param(str(req["name"]), int(req["value"]))
        except (KeyError, TypeError, ValueError) as e:
            return {"error": "EINVAL", "message": f"mdt_param: {e!r}"}
        return {}
    if req.get("op") == "list":
        return {"params": {n: registry.get(n) for n in registry.names}, "stats": [stats_name]}
    if req.get("op") in ("stats", "clear"):
        if req.get("name") != stats_name:
            return {"error": "ENOENT", "message": f"{req.get('name')}: no such statistics"}
        if req["op"] == "clear":
            stats.clear()
            return {}
        return {"text": stats.render()}
    if req.get("op") == "set":
        name = str(req.get("name"))
        if name not in registry.names:
            return {"error": "ENOENT", "message": f"{name}: no such parameter"}
        try:
            return {"value": registry.set(name, str(req.get("value")))}
        except LustreError as e:
            return {"error": "EINVAL", "message": str(e)}
    return {"error": "EINVAL", "message": f"unknown request {req!r}"}


def _recv(conn: socket.socket) -> bytes:
    chunks = []
    while True:
        b = conn.recv(65536)
        if not b:
            break
        chunks.append(b)
        if b.endswith(b"\n"):   # a request ends with a newline; an answer with the connection
            break
    return b"".join(chunks)


def request(path: Path, req: dict, timeout: float = 5.0) -> dict:
    """One request to a mount's socket (the lctl side)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        unix_socket.connect(s, path)
        s.sendall(json.dumps(req).encode() + b"\n")
        return json.loads(_recv(s))
