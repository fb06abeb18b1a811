"""The RGW HTTP front end: an HTTP/1.1 server (keep-alive, Content-Length and chunked bodies,
`Expect: 100-continue`) handing each request to the pure `Gateway`, one thread per connection.

A connection's thread reads a request, calls the gateway and writes the answer, all in blocking calls,
as RGW's beast front end gives each request a coroutine of its own. The gateway's work blocks (chunk
I/O to the OSDs, commits to the monitor), so it needs a thread anyway; an event loop in front only
added a hand-off per request (to a pool thread and back), which cost a third of the gateway's CPU on a
4 KiB PUT. Big bodies are received straight into their buffer, hashed as they arrive (received.py),
and big answers leave in `sendmsg` calls from the RADOS objects' own buffers.

Run stand-alone over an in-process cluster (port 7480 is RGW's default):
    python -m services.ceph.rgw.http --port 7480 --users users.json
or in a test: `server = start_in_thread(gateway, "127.0.0.1", 0)`, then `server.port`, `server.stop()`.
With `--ssl-cert/--ssl-key` (or an `ssl.SSLContext`) it serves https, as RGW's `ssl_port` does;
SDKs change behaviour over TLS (boto3 then streams bodies `aws-chunked` with trailing checksums).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import logging
import socket
import ssl
import threading
import time
from collections.abc import Iterable
from http import HTTPStatus
from pathlib import Path

from services.ceph.memtune import tune_malloc
from services.ceph.msgr import Data, sendmsg_all
from services.ceph.rgw import received
from services.ceph.rgw.cluster_setup import DATA_POOL, INDEX_POOL, rgw_cluster
from services.ceph.rgw.gateway import Gateway
from services.ceph.rgw.received import ReceivedBody
from services.ceph.rgw.users import Users
from services.ceph.rgw.wire import Part, Request, Response, part_len

log = logging.getLogger("rgw.http")
MAX_HEADER = 64 << 10
IDLE_TIMEOUT = 60.0
WRITE_CHUNK = 1 << 20  # larger response bodies are sent part by part, from their own buffers
DIRECT_BODY = 1 << 20  # larger request bodies are received straight into their buffer
RECV_STEP = 1 << 20    # ... a MiB at a time, so their digests follow the arrival


class _BadRequest(Exception):
    pass


class _Closed(Exception):
    """The peer went away (or sent nothing more) before the request was whole."""


def _read_head(rfile: io.BufferedReader) -> bytes | None:
    """The request line and headers, up to the blank line; None when the connection ends between requests."""
    lines: list[bytes] = []
    size = 0
    while True:
        line = rfile.readline(MAX_HEADER + 1)
        if not line:
            if lines:
                raise _Closed
            return None
        size += len(line)
        if size > MAX_HEADER:
            raise _Closed   # (asyncio's StreamReader limit did the same: the connection closed)
        if line in (b"\r\n", b"\n"):
            if lines:
                return b"".join(lines)
            continue   # a stray CRLF between requests (RFC 9112 2.2)
        lines.append(line)


def _read_exactly(rfile: io.BufferedReader, n: int) -> bytes:
    data = rfile.read(n)
    if len(data) < n:
        raise _Closed
    return data


def _read_direct(rfile: io.BufferedReader, n: int, digests: tuple[str, ...]) -> ReceivedBody:
    """A big body read into its buffer, the digests told how far it has come."""
    body = ReceivedBody(n, digests)
    view = memoryview(body)
    got = 0
    try:
        while got < n:
            k = rfile.readinto(view[got: got + RECV_STEP])
            if not k:
                raise _Closed
            got += k
            body.arrived(got)
    except BaseException:
        body.abandon()  # its digest threads stop waiting for bytes that will not come
        raise
    finally:
        view.release()
    return body


def _read_body(rfile: io.BufferedReader, headers: dict[str, str], direct: bool,
               digests: tuple[str, ...] = ()) -> bytes:
    """The body; with `direct`, one of `DIRECT_BODY` bytes or more is received straight into its
    buffer (a bytearray, which the gateway reads as it reads bytes), `digests` computed as it arrives."""
    if "chunked" in headers.get("transfer-encoding", "").lower():
        out = bytearray()
        while True:
            line = rfile.readline(MAX_HEADER)
            if not line.endswith(b"\n"):
                raise _Closed
            size = int(line.split(b";", 1)[0].strip() or b"0", 16)
            if size == 0:
                while (trailer := rfile.readline(MAX_HEADER)) not in (b"\r\n", b"\n"):
                    if not trailer:
                        raise _Closed
                return bytes(out)
            out += _read_exactly(rfile, size)
            _read_exactly(rfile, 2)
    n = headers.get("content-length", "0")
    if not n.isdigit():
        raise _BadRequest(f"bad Content-Length {n!r}")
    if direct and int(n) >= DIRECT_BODY:
        return _read_direct(rfile, int(n), digests)
    return _read_exactly(rfile, int(n))


def _head(resp: Response, keep_alive: bool) -> bytes:
    reason = HTTPStatus(resp.status).phrase if resp.status in HTTPStatus._value2member_map_ else "Unknown"
    length = resp.length if resp.length is not None else len(resp.body)
    lines = [f"HTTP/1.1 {resp.status} {reason}", *(f"{k}: {v}" for k, v in resp.headers)]
    if resp.status not in (204, 304):
        lines.append(f"Content-Length: {length}")
    lines.append(f"Connection: {'keep-alive' if keep_alive else 'close'}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1", "replace")


def _joined(part: Part) -> bytes | memoryview:
    return b"".join(part) if isinstance(part, list) else part


def _send(sock: socket.socket, bufs: list[Data]) -> None:
    """Buffers sent as they are: one `sendmsg` over plain TCP; TLS (no sendmsg) takes them in turn."""
    if isinstance(sock, ssl.SSLSocket):
        for b in bufs:
            sock.sendall(b)
    else:
        sendmsg_all(sock, bufs)


def _send_parts(sock: socket.socket, head: bytes, parts: Iterable[Part]) -> bool:
    """Send the status, headers and body part by part (each a RADOS object, its pieces gathered; the
    next one read meanwhile: Store.iter_parts reads ahead). False when the client went away or a part
    could not be read: the response is cut short."""
    it = iter(parts)
    try:
        bufs: list[Data] = [head]
        for part in it:
            bufs += part if isinstance(part, list) else [part]
            _send(sock, bufs)
            bufs = []
        _send(sock, bufs)
    except Exception as e:  # noqa: BLE001 - after the status line the only way to fail is to stop
        if not isinstance(e, OSError):
            log.warning("response cut short: reading the body failed: %s", e)
        return False
    finally:
        close = getattr(it, "close", None)
        if close is not None:
            close()   # what was read ahead is dropped
    return True


class HttpServer:
    """The listening socket and the threads of its connections. `serve_forever()` accepts until `close()`."""

    def __init__(self, gw: Gateway, host: str, port: int, tls: ssl.SSLContext | None = None) -> None:
        self.gw, self.tls = gw, tls
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.listener = socket.create_server((host, port), family=family, backlog=1024)
        self.port: int = self.listener.getsockname()[1]
        self._lock = threading.Lock()
        self._open: dict[threading.Thread, socket.socket] = {}
        self.closed = threading.Event()

    def serve_forever(self) -> None:
        while not self.closed.is_set():
            try:
                sock, peer = self.listener.accept()
            except OSError:
                if self.closed.is_set():
                    return
                self.closed.wait(0.05)   # out of descriptors, say: try again shortly
                continue
            t = threading.Thread(target=self._connection, args=(sock, peer), name="rgw-conn", daemon=True)
            with self._lock:
                if self.closed.is_set():
                    sock.close()
                    return
                self._open[t] = sock
            t.start()

    def close(self, grace: float = 1.0, timeout: float = 5.0) -> None:
        """Stop accepting and end every open connection: an idle one at once, one sending an answer
        after `grace` seconds at most (a client that stopped reading does not hold the server)."""
        self.closed.set()
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)   # wakes the accept
        self.listener.close()
        for how, wait in ((socket.SHUT_RD, grace), (socket.SHUT_RDWR, timeout)):
            with self._lock:
                conns = dict(self._open)
            for sock in conns.values():
                with contextlib.suppress(OSError):
                    # the plain socket's shutdown: an SSLSocket's own drops its TLS state under the thread
                    socket.socket.shutdown(sock, how)
            deadline = time.monotonic() + wait
            for t in conns:
                t.join(max(0.0, deadline - time.monotonic()))

    def _connection(self, sock: socket.socket, peer: tuple[str, int]) -> None:
        me = threading.current_thread()
        rfile: io.BufferedReader | None = None
        try:
            sock.settimeout(IDLE_TIMEOUT)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.tls is not None:
                sock = self.tls.wrap_socket(sock, server_side=True)
                with self._lock:
                    self._open[me] = sock
            rfile = sock.makefile("rb", buffering=MAX_HEADER)
            while not self.closed.is_set() and self._serve_one(sock, rfile, peer[0]):
                pass
        except (_Closed, OSError, ValueError):
            pass   # the peer went, timed out, or sent garbage: the connection ends
        except Exception:
            log.exception("connection from %s failed", peer[0])
        finally:
            with self._lock:
                self._open.pop(me, None)
            with contextlib.suppress(OSError):
                if rfile is not None:
                    rfile.close()   # (the descriptor stays open while its file object does)
                sock.close()

    def _serve_one(self, sock: socket.socket, rfile: io.BufferedReader, peer: str) -> bool:
        """Serve one request; returns whether the connection stays open."""
        raw = _read_head(rfile)
        if raw is None:
            return False
        lines = raw.decode("latin-1").split("\r\n")
        try:
            method, target, version = lines[0].strip().split(" ")
        except ValueError:
            return False
        headers: dict[str, str] = {}
        for line in lines[1:]:
            if not line:
                continue
            name, _, value = line.partition(":")
            k = name.strip().lower()
            headers[k] = f"{headers[k]},{value.strip()}" if k in headers else value.strip()
        keep = version == "HTTP/1.1" and headers.get("connection", "").lower() != "close"
        if headers.get("expect", "").lower() == "100-continue":
            sock.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
        try:
            # aws-chunked bodies (which SDKs send over TLS) are decoded by chunked.py, from one buffer
            streaming = headers.get("x-amz-content-sha256", "").startswith("STREAMING-")
            body = _read_body(rfile, headers, not streaming, received.wanted(method, headers))
        except (_BadRequest, ValueError):
            sock.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            return False
        path, _, query = target.partition("?")
        req = Request(method, path, query, headers, body, peer, secure=self.tls is not None)
        resp = self.gw.handle(req)
        head = _head(resp, keep)
        if resp.parts is None or method == "HEAD":
            _send(sock, [head] if method == "HEAD" else [head, resp.body])
        elif isinstance(resp.parts, list) and sum(part_len(p) for p in resp.parts) <= WRITE_CHUNK:
            _send(sock, [head, *(_joined(p) for p in resp.parts)])
        elif not _send_parts(sock, head, resp.parts):
            return False
        return keep


class RunningServer:
    """A server accepting on its own thread (tests, the stand-alone command)."""

    def __init__(self, server: HttpServer) -> None:
        self.server, self.port = server, server.port
        self.thread = threading.Thread(target=server.serve_forever, name="rgw-http", daemon=True)
        self.thread.start()

    @property
    def stopped(self) -> bool:
        return self.server.closed.is_set()

    def stop(self) -> None:
        self.server.close()
        self.thread.join(timeout=5)


def tls_context(cert: Path, key: Path) -> ssl.SSLContext:
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(cert, key)
    return ctx


def start_in_thread(gw: Gateway, host: str = "127.0.0.1", port: int = 0,
                    tls: ssl.SSLContext | None = None) -> RunningServer:
    return RunningServer(HttpServer(gw, host, port, tls))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="RGW S3 gateway over an in-process Ceph cluster")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=7480)
    ap.add_argument("--users", type=Path, required=True, help="JSON list of {uid, access_key, secret_key, ...}")
    ap.add_argument("--hosts", type=int, default=12, help="Ceph hosts (one HDD + one SSD OSD each)")
    ap.add_argument("--ssl-cert", type=Path, help="PEM certificate: serve https")
    ap.add_argument("--ssl-key", type=Path, help="PEM private key of --ssl-cert")
    args = ap.parse_args(argv)
    tls = tls_context(args.ssl_cert, args.ssl_key) if args.ssl_cert else None
    tune_malloc()  # 4 MiB stripes and their EC chunks reuse heap memory (Ceph links tcmalloc)
    gw = Gateway(rgw_cluster(args.hosts), Users.load(args.users), DATA_POOL, INDEX_POOL)
    server = HttpServer(gw, args.host, args.port, tls)
    scheme = "https" if tls else "http"
    print(f"rgw listening on {scheme}://{args.host}:{server.port}", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()
    server.close()


if __name__ == "__main__":
    main()
