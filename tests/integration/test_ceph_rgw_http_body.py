"""The gateway's HTTP front end with raw sockets: a big body (received straight into its buffer)
followed by a pipelined request on the same connection, a body cut short, and a big GET sent
stripe by stripe, over an in-process Ceph cluster."""

from __future__ import annotations

import hashlib
import os
import socket
import time
from collections.abc import Iterator

import pytest

from services.ceph.rgw.cluster_setup import DATA_POOL, INDEX_POOL, rgw_cluster
from services.ceph.rgw.gateway import Gateway
from services.ceph.rgw.http import DIRECT_BODY, RunningServer, start_in_thread
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
