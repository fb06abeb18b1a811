"""The gateway's HTTP front end with raw sockets: a big body (received straight into its buffer)
followed by a pipelined request on the same connection, a body cut short, and a big GET sent
stripe by stripe, over an in-process Ceph cluster."""

from __future__ import annotations

import base64
import hashlib
import os
import socket
import ssl
import subprocess
import threading
import time
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from services.ceph.rgw import received
from services.ceph.rgw.cluster_setup import DATA_POOL, INDEX_POOL, rgw_cluster
from services.ceph.rgw.gateway import Gateway
from services.ceph.rgw.http import DIRECT_BODY, RunningServer, start_in_thread, tls_context
from services.ceph.rgw.users import User, Users
from services.ceph.rgw.wire import Request, Response

MiB = 1 << 20


@pytest.fixture(scope="module")
def echo() -> Iterator[tuple[RunningServer, list[Request]]]:
    """A gateway whose handler records each request and answers with the MD5 of its body."""
    gw = Gateway(rgw_cluster(12), Users([User("u", "U", "AK", "SK")]), DATA_POOL, INDEX_POOL)
    seen: list[Request] = []

    def handle(req: Request) -> Response:
        seen.append(req)
        return Response(200, [], hashlib.md5(req.body).hexdigest().encode())

    gw.handle = handle  # type: ignore[method-assign]
    server = start_in_thread(gw)
    yield server, seen
    server.stop()


def responses(sock: socket.socket, n: int) -> list[bytes]:
    """The bodies of the next `n` responses (each has a Content-Length)."""
    buf, out = b"", []
    while len(out) < n:
        while b"\r\n\r\n" not in buf:
            more = sock.recv(65536)
            assert more, f"connection closed after {len(out)} responses"
            buf += more
        head, _, buf = buf.partition(b"\r\n\r\n")
        length = int(next(h.split(b":")[1] for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")))
        while len(buf) < length:
            buf += sock.recv(65536)
        out.append(buf[:length])
        buf = buf[length:]
    return out


def test_big_body_then_pipelined_request_on_one_connection(echo: tuple[RunningServer, list[Request]]) -> None:
    server, seen = echo
    big = os.urandom(9 * MiB + 3)
    assert len(big) >= DIRECT_BODY
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
        for _ in range(2):  # keep-alive: the connection serves the next request afterwards
            s.sendall(b"PUT /b/big HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(big) + big
                      + b"PUT /b/small HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")
            got = responses(s, 2)
            assert got == [hashlib.md5(big).hexdigest().encode(), hashlib.md5(b"hello").hexdigest().encode()]
    assert [(r.raw_path, bytes(r.body[:8]), len(r.body)) for r in seen[-2:]] == [
        ("/b/big", big[:8], len(big)), ("/b/small", b"hello", 5)]


def test_body_cut_short_closes_the_connection_and_the_server_goes_on(
        echo: tuple[RunningServer, list[Request]]) -> None:
    server, seen = echo
    n = len(seen)
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
        s.sendall(b"PUT /b/cut HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % (4 * MiB) + os.urandom(MiB + 1))
        time.sleep(0.2)
        s.shutdown(socket.SHUT_WR)
        s.settimeout(5)
        assert s.recv(100) == b""  # no response, the connection is closed
    assert len(seen) == n  # the handler never saw the partial body
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
        s.sendall(b"PUT /b/after HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nok")
        assert responses(s, 1) == [hashlib.md5(b"ok").hexdigest().encode()]


def test_big_put_is_hashed_as_it_arrives(echo: tuple[RunningServer, list[Request]]) -> None:
    """The digests the gateway takes of a big PUT (ETag MD5, SigV4 payload SHA-256, x-amz-checksum-crc32)
    were followed while the body arrived, and equal the hashes of the whole body."""
    server, seen = echo
    big = os.urandom(6 * MiB + 5)
    sha = hashlib.sha256(big).hexdigest()
    crc = base64.b64encode(zlib.crc32(big).to_bytes(4, "big")).decode()
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
        s.sendall(b"PUT /b/hashed HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\nx-amz-content-sha256: %s\r\n"
                  b"x-amz-checksum-crc32: %s\r\n\r\n" % (len(big), sha.encode(), crc.encode()))
        for off in range(0, len(big), MiB):  # in pieces, with pauses: the hashing follows the arrival
            s.sendall(big[off: off + MiB])
            time.sleep(0.01)
        responses(s, 1)
    body = seen[-1].body
    assert {a: received.pending(body, a) is not None for a in ("md5", "sha256", "crc32", "sha1")} == {
        "md5": True, "sha256": True, "crc32": True, "sha1": False}
    assert received.digest(body, "md5") == hashlib.md5(big).digest()
    assert received.digest(body, "sha256").hex() == sha
    assert received.digest(body, "crc32") == zlib.crc32(big).to_bytes(4, "big")
    assert received.digest(body, "sha1") == hashlib.sha1(big).digest()  # not streamed: computed when asked


def test_body_cut_short_stops_its_digest_threads(echo: tuple[RunningServer, list[Request]]) -> None:
    server, _ = echo
    before = {t for t in threading.enumerate() if t.name.startswith("rgw-")}
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
        s.sendall(b"PUT /b/cut2 HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % (8 * MiB) + os.urandom(2 * MiB))
        time.sleep(0.2)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and {t for t in threading.enumerate() if t.name.startswith("rgw-")} - before:
        time.sleep(0.05)
    assert not {t for t in threading.enumerate() if t.name.startswith("rgw-md5")} - before


# -- a big GET sent from its parts' buffers (http._send_parts) ------------------------------------

class _Parts:
    """A GET body as the store yields it (wire.Part): gathered lists of views and plain buffers; `closed`
    when the sender is done with the iterator (sent, or given up)."""

    def __init__(self, pieces: list[bytes | list[memoryview]]) -> None:
        self.pieces, self.closed = pieces, threading.Event()

    def __iter__(self) -> Iterator[bytes | list[memoryview]]:
        try:
            yield from self.pieces
        finally:
            self.closed.set()


@pytest.fixture()
def streamer() -> Iterator[tuple[RunningServer, list[_Parts]]]:
    """A gateway whose GET of /b/<n> answers n MiB as 4 KiB views in lists of 1024 and 2000 (more than
    one sendmsg takes) and a plain buffer, each made from the same pattern."""
    gw = Gateway(rgw_cluster(12), Users([User("u", "U", "AK", "SK")]), DATA_POOL, INDEX_POOL)
    made: list[_Parts] = []

    def handle(req: Request) -> Response:
        data = _pattern(int(req.raw_path.rsplit("/", 1)[1]) * MiB)
        view = memoryview(data)
        pieces: list[bytes | list[memoryview]] = []
        off = 0
        for i, n in enumerate(_cuts(len(data))):
            pieces.append(data[off: off + n] if i % 3 == 1 else [view[o: o + 4096] for o in range(off, off + n, 4096)])
            off += n
        made.append(_Parts(pieces))
        return Response(200, [], length=len(data), parts=made[-1])

    gw.handle = handle  # type: ignore[method-assign]
    server = start_in_thread(gw)
    yield server, made
    if not server.stopped:   # (a test stops it itself)
        server.stop()


def _pattern(n: int) -> bytes:
    return (bytes(range(251)) * (n // 251 + 1))[:n]   # (251: no period that lines up with 4 KiB)


def _cuts(n: int) -> list[int]:
    out = []
    while n:
        out.append(min(n, (4 << 20) if len(out) % 2 == 0 else 2000 * 4096))
        n -= out[-1]
    return out


def test_a_big_get_from_gathered_buffers_arrives_whole_and_the_connection_goes_on(
        streamer: tuple[RunningServer, list[_Parts]]) -> None:
    server, made = streamer
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
        s.sendall(b"GET /b/21 HTTP/1.1\r\nHost: x\r\n\r\nGET /b/1 HTTP/1.1\r\nHost: x\r\n\r\n")
        big, small = responses(s, 2)   # the second request waited in the socket while the first went out
    assert big == _pattern(21 * MiB) and small == _pattern(MiB)
    assert all(p.closed.is_set() for p in made)


def test_a_client_leaving_mid_get_ends_the_send_and_the_server_goes_on(
        streamer: tuple[RunningServer, list[_Parts]]) -> None:
    server, made = streamer
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
        s.sendall(b"GET /b/64 HTTP/1.1\r\nHost: x\r\n\r\n")
        assert len(s.recv(MiB)) > 0
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")   # a reset
    assert made[0].closed.wait(10), "the sender still holds the body"
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
        s.sendall(b"GET /b/2 HTTP/1.1\r\nHost: x\r\n\r\n")
        assert responses(s, 1) == [_pattern(2 * MiB)]


def test_the_server_stops_while_a_client_does_not_read_its_get(
        streamer: tuple[RunningServer, list[_Parts]]) -> None:
    server, made = streamer
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
        s.sendall(b"GET /b/200 HTTP/1.1\r\nHost: x\r\n\r\n")   # far more than the sockets' buffers hold
        deadline = time.monotonic() + 10
        while not made and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.3)
        t0 = time.monotonic()
        server.stop()   # would wait out its 5 s bounds (and raise) if the sending thread held on
        assert time.monotonic() - t0 < 5
    assert made[0].closed.wait(5)


# -- stopping with connections open ----------------------------------------------------------------


@pytest.mark.parametrize("tls", [False, True], ids=["plain", "tls"])
def test_stop_ends_idle_keep_alive_connections_at_once(tmp_path: Path, tls: bool) -> None:
    """A client that keeps its connection open after an answer (boto3's pool does) does not hold a
    stopping server: its thread ends, and the client reads the end of the connection."""
    gw = Gateway(rgw_cluster(12), Users([User("u", "U", "AK", "SK")]), DATA_POOL, INDEX_POOL)
    gw.handle = lambda req: Response(200, [], b"ok")  # type: ignore[method-assign]
    ctx = None
    if tls:
        cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                        "-subj", "/CN=127.0.0.1", "-keyout", str(key), "-out", str(cert)],
                       check=True, capture_output=True)
        ctx = tls_context(cert, key)
    server = start_in_thread(gw, tls=ctx)
    raw = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    s = raw
    if tls:
        client_ctx = ssl.create_default_context()
        client_ctx.check_hostname, client_ctx.verify_mode = False, ssl.CERT_NONE
        s = client_ctx.wrap_socket(raw)
    with s:
        s.sendall(b"GET /b/k HTTP/1.1\r\nHost: x\r\n\r\n")
        assert responses(s, 1) == [b"ok"]
        conns = [t for t in threading.enumerate() if t.name == "rgw-conn"]
        assert conns, "the connection's thread"
        t0 = time.monotonic()
        server.stop()
        assert time.monotonic() - t0 < 1.0   # the idle connection did not wait out the grace
        assert not any(t.is_alive() for t in conns)
        try:
            assert s.recv(10) == b""   # the server closed it
        except (ssl.SSLError, ConnectionError):
            pass   # (TLS: the server went without close_notify, which a TLS client may report)
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", server.port), timeout=2).close()
