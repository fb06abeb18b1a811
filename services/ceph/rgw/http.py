"""The RGW HTTP front end: an asyncio HTTP/1.1 server (keep-alive, Content-Length and chunked
bodies, `Expect: 100-continue`) handing each request to the pure `Gateway`.

Run stand-alone over an in-process cluster (port 7480 is RGW's default):
    python -m services.ceph.rgw.http --port 7480 --users users.json
or in a test: `server = start_in_thread(gateway, "127.0.0.1", 0)`, then `server.port`, `server.stop()`.
With `--ssl-cert/--ssl-key` (or an `ssl.SSLContext`) it serves https, as RGW's `ssl_port` does;
SDKs change behaviour over TLS (boto3 then streams bodies `aws-chunked` with trailing checksums).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import socket
import ssl
import struct
import threading
from collections.abc import Iterable
from dataclasses import dataclass
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
WRITE_CHUNK = 1 << 20  # larger response bodies are written a MiB at a time
DIRECT_BODY = 1 << 20  # larger request bodies are received straight into their buffer


class _BadRequest(Exception):
    pass


class _BodyReceiver(asyncio.BufferedProtocol):
    """Stands in for the connection's StreamReaderProtocol while a big body arrives: the socket is
    read (recv_into) straight into the body's buffer, never more than the body, instead of through
    the StreamReader's buffer and its copies (4-5x faster for a 64 MiB PUT), and the body's digests
    are told how far it has come. The stream protocol is put back the moment the body is complete
    or the connection ends."""

    def __init__(self, transport: asyncio.Transport, body: ReceivedBody, got: int) -> None:
        self.transport, self.body, self.view, self.got = transport, body, memoryview(body), got
        self.stream = transport.get_protocol()
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        transport.set_protocol(self)

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.view[self.got:]

    def buffer_updated(self, nbytes: int) -> None:
        self.got += nbytes
        self.body.arrived(self.got)
        if self.got == len(self.view):
            self._finish(None)

    def eof_received(self) -> bool | None:
        self._finish(asyncio.IncompleteReadError(b"", len(self.view)))
        return self.stream.eof_received()  # type: ignore[attr-defined, no-any-return]

    def connection_lost(self, exc: Exception | None) -> None:
        self._finish(asyncio.IncompleteReadError(b"", len(self.view)))
        self.stream.connection_lost(exc)

    def _finish(self, error: Exception | None) -> None:
        if self.done.done():
            return
        self.transport.set_protocol(self.stream)
        if error is None:
            self.done.set_result(None)
        else:
            self.done.set_exception(error)


async def _read_direct(reader: asyncio.StreamReader, transport: asyncio.Transport, n: int,
                       digests: tuple[str, ...]) -> ReceivedBody:
    body = ReceivedBody(n, digests)
    try:
        first = await reader.read(n)  # what came with the headers (or the first recv), through the StreamReader
        if not first:
            raise asyncio.IncompleteReadError(b"", n)
        body[: len(first)] = first
        body.arrived(len(first))
        if len(first) < n:
            await _BodyReceiver(transport, body, len(first)).done
    except BaseException:
        body.abandon()  # its digest threads stop waiting for bytes that will not come
        raise
    return body


async def _read_body(reader: asyncio.StreamReader, headers: dict[str, str],
                     transport: asyncio.Transport | None = None, digests: tuple[str, ...] = ()) -> bytes:
    """The body; with `transport` (plain TCP), one of `DIRECT_BODY` bytes or more is received
    straight into its buffer (a bytearray, which the gateway reads as it reads bytes), `digests`
    computed as it arrives."""
    if "chunked" in headers.get("transfer-encoding", "").lower():
        out = bytearray()
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";", 1)[0].strip() or b"0", 16)
            if size == 0:
                while (await reader.readuntil(b"\r\n")) != b"\r\n":  # trailers
                    pass
                return bytes(out)
            out += await reader.readexactly(size)
            await reader.readexactly(2)
    n = headers.get("content-length", "0")
    if not n.isdigit():
        raise _BadRequest(f"bad Content-Length {n!r}")
    if transport is not None and int(n) >= DIRECT_BODY:
        return await _read_direct(reader, transport, int(n), digests)
    return await reader.readexactly(int(n))


def _head(resp: Response, keep_alive: bool) -> bytes:
    reason = HTTPStatus(resp.status).phrase if resp.status in HTTPStatus._value2member_map_ else "Unknown"
    length = resp.length if resp.length is not None else len(resp.body)
    lines = [f"HTTP/1.1 {resp.status} {reason}", *(f"{k}: {v}" for k, v in resp.headers)]
    if resp.status not in (204, 304):
        lines.append(f"Content-Length: {length}")
    lines.append(f"Connection: {'keep-alive' if keep_alive else 'close'}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1", "replace")


async def _serve_one(gw: Gateway, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
    """Serve one request; returns whether the connection stays open."""
    try:
        async with asyncio.timeout(IDLE_TIMEOUT):  # not wait_for: that wraps every request's read in a new task
            raw = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, TimeoutError):
        return False
    lines = raw.decode("latin-1").split("\r\n")
    try:
        method, target, version = lines[0].split(" ")
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
        writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
    try:
        # Big bodies straight from the socket, except over TLS and for aws-chunked bodies, which
        # chunked.py decodes (and which SDKs only send over TLS).
        plain = writer.get_extra_info("sslcontext") is None and isinstance(writer.transport, asyncio.Transport)
        streaming = headers.get("x-amz-content-sha256", "").startswith("STREAMING-")
        body = await _read_body(reader, headers, writer.transport if plain and not streaming else None,
                                received.wanted(method, headers))
    except (_BadRequest, ValueError):
        writer.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        return False
    path, _, query = target.partition("?")
    peer = writer.get_extra_info("peername")
    req = Request(method, path, query, headers, body, peer[0] if peer else "",
                  secure=writer.get_extra_info("sslcontext") is not None)
    resp = await asyncio.to_thread(gw.handle, req)
    if resp.parts is None or method == "HEAD":
        writer.write(_head(resp, keep) + (b"" if method == "HEAD" else resp.body))
    elif isinstance(resp.parts, list) and sum(part_len(p) for p in resp.parts) <= WRITE_CHUNK:
        writer.write(b"".join([_head(resp, keep), *(_joined(p) for p in resp.parts)]))
    elif plain and writer.transport.get_write_buffer_size() == 0:
        if not await _send_gathered(writer.transport, _head(resp, keep), resp.parts):   # type: ignore[arg-type]
            return False
    else:
        writer.write(_head(resp, keep))
        if not await _send_parts(writer, resp.parts):
            return False
    await writer.drain()
    return keep


def _joined(part: Part) -> bytes | memoryview:
    return b"".join(part) if isinstance(part, list) else part


async def _send_parts(writer: asyncio.StreamWriter, parts: Iterable[Part]) -> bool:
    """Send a body part by part, reading the next part (a RADOS object: chunks fetched, checked,
    decoded) on a worker thread while this one is written; the transport never buffers more than
    `WRITE_CHUNK` of it. False when a part could not be read: the response is cut short."""
    it = iter(parts)
    pending = asyncio.ensure_future(asyncio.to_thread(next, it, None))
    try:
        while (part := await pending) is not None:
            pending = asyncio.ensure_future(asyncio.to_thread(next, it, None))
            view = memoryview(_joined(part))
            for off in range(0, len(view), WRITE_CHUNK):
                writer.write(view[off: off + WRITE_CHUNK])
                await writer.drain()
    except Exception as e:  # noqa: BLE001 - after the status line the only way to fail is to stop
        if not isinstance(e, ConnectionError):
            log.warning("response cut short: reading the body failed: %s", e)
        with contextlib.suppress(Exception):
            await pending  # a part being read finishes before the connection goes
        return False
    return True


async def _send_gathered(transport: asyncio.Transport, head: bytes, parts: Iterable[Part]) -> bool:
    """Send the status, headers and body on a worker thread: each part (a RADOS object, its pieces
    gathered) in blocking `sendmsg` calls, the GIL let go while the kernel copies, the next part read
    meanwhile (Store.iter_parts reads ahead). Through the transport each part would be joined (one
    more copy of the object) and written a MiB at a time on the event loop. The thread sends on its
    own descriptor of the socket, which the loop, its reading paused meanwhile, does not touch: the
    socket is blocking (with `IDLE_TIMEOUT` as its send timeout) only while the thread has it.
    False when the client went away or a part could not be read: the response is cut short."""
    sock = socket.socket(fileno=os.dup(transport.get_extra_info("socket").fileno()))
    transport.pause_reading()
    sock.settimeout(None)
    secs = int(IDLE_TIMEOUT)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, struct.pack("ll", secs, 0))
    sending = asyncio.ensure_future(asyncio.to_thread(_send_all, sock, head, parts))
    try:
        return await asyncio.shield(sending)
    except asyncio.CancelledError:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)   # the server stopping: the thread's send fails at once
        await asyncio.wait([sending])
        raise
    finally:
        sock.setblocking(False)   # (the descriptors share the socket's file status flags)
        sock.close()
        if not transport.is_closing():
            transport.resume_reading()


def _send_all(sock: socket.socket, head: bytes, parts: Iterable[Part]) -> bool:
    it = iter(parts)
    try:
        bufs: list[Data] = [head]
        for part in it:
            bufs += part if isinstance(part, list) else [part]
            sendmsg_all(sock, bufs)
            bufs = []
        sendmsg_all(sock, bufs)
    except Exception as e:  # noqa: BLE001 - after the status line the only way to fail is to stop
        if not isinstance(e, OSError):
            log.warning("response cut short: reading the body failed: %s", e)
        return False
    finally:
        close = getattr(it, "close", None)
        if close is not None:
            close()   # what was read ahead is dropped
    return True


async def serve(gw: Gateway, host: str, port: int, tls: ssl.SSLContext | None = None) -> asyncio.Server:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while await _serve_one(gw, reader, writer):
                pass
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError, ssl.SSLError):
            pass
        except asyncio.CancelledError:
            pass  # the server stopping with this keep-alive connection open: asyncio would log it as an error
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError, TimeoutError, ssl.SSLError):
                await asyncio.wait_for(writer.wait_closed(), 1.0)  # a TLS peer may never answer close_notify

    return await asyncio.start_server(handle, host, port, reuse_address=True, limit=MAX_HEADER, ssl=tls)


@dataclass
class RunningServer:
    port: int
    loop: asyncio.AbstractEventLoop
    server: asyncio.Server
    thread: threading.Thread

    def stop(self) -> None:
        async def close() -> None:
            self.server.close()
            me = asyncio.current_task()
            tasks = [t for t in asyncio.all_tasks() if t is not me]
            for t in tasks:  # open keep-alive connections
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(close(), self.loop).result(timeout=5)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)
        self.loop.close()


def tls_context(cert: Path, key: Path) -> ssl.SSLContext:
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(cert, key)
    return ctx


def start_in_thread(gw: Gateway, host: str = "127.0.0.1", port: int = 0,
                    tls: ssl.SSLContext | None = None) -> RunningServer:
    loop = asyncio.new_event_loop()
    server = loop.run_until_complete(serve(gw, host, port, tls))
    thread = threading.Thread(target=loop.run_forever, name="rgw-http", daemon=True)
    thread.start()
    return RunningServer(server.sockets[0].getsockname()[1], loop, server, thread)


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

    async def run() -> None:
        server = await serve(gw, args.host, args.port, tls)
        scheme = "https" if tls else "http"
        print(f"rgw listening on {scheme}://{args.host}:{server.sockets[0].getsockname()[1]}", flush=True)
        async with server:
            await server.serve_forever()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(run())


if __name__ == "__main__":
    main()
