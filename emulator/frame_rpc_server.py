"""The server's end of framed unary calls (frame_rpc.py): a listener beside a daemon's gRPC server that
answers the same servicer's unary methods, on the daemon's event loop.

The methods are found as gRPC finds them: the generated `add_<Service>Servicer_to_server` hands its
method handlers to this server as it would to a `grpc.aio.Server`. Each call runs the servicer's
coroutine with a context that has what the twin's servicers use of gRPC's (the caller's metadata,
trailing metadata, abort); an abort answers with its code, details and trailing metadata, as gRPC
would. A connection's calls are answered in order, one at a time (its client waits for each);
calls on different connections run concurrently, as gRPC's do.

Each connection is an asyncio Protocol, and a call's coroutine is first run right where its frame
arrived: most servicer methods (the MDS's, the monitor's reads) finish without waiting, and their
answer is written at once. Only a call that waits (a worker thread, a lock) becomes a task, and the
connection's next frames wait for it. A StreamReader and a task per connection cost a wake-up and a
loop turn per call, a sixth of a small MDS call's CPU.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any, NoReturn

import grpc

from emulator.frame_rpc import LENGTH, MAX_FRAME, REQUEST, Metadata, reply_frame, unpack_pairs

log = logging.getLogger("frame_rpc")


class _Aborted(Exception):
    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(details)
        self.code, self.details = code, details


class FramedContext:
    """What a servicer method may use of `grpc.aio.ServicerContext` on a framed call."""

    def __init__(self, metadata: Metadata, peer: str) -> None:
        self._metadata = tuple(metadata)
        self._peer = peer
        self.trailing: Metadata = ()
        self.code = grpc.StatusCode.OK
        self.details = ""

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return self._metadata

    def set_trailing_metadata(self, metadata: Metadata) -> None:
        self.trailing = tuple(metadata)

    def set_code(self, code: grpc.StatusCode) -> None:
        self.code = code

    def set_details(self, details: str) -> None:
        self.details = details

    async def abort(self, code: grpc.StatusCode, details: str = "", trailing_metadata: Metadata = ()) -> NoReturn:
        if trailing_metadata:
            self.trailing = tuple(trailing_metadata)
        raise _Aborted(code, details)

    def peer(self) -> str:
        return self._peer

    def time_remaining(self) -> None:
        return None

    def cancelled(self) -> bool:
        return False


class _Details:
    def __init__(self, method: str) -> None:
        self.method = method
        self.invocation_metadata = ()


class FramedServer:
    """`add(add_servicer_to_server, servicer)` for each service, then `start(host, port)` for each address."""

    def __init__(self) -> None:
        self.generic: list[Any] = []
        self.handlers: dict[str, Any] = {}
        self.servers: list[asyncio.base_events.Server] = []
        self.connections: set[_Connection] = set()

    # what a generated add_<Service>Servicer_to_server calls on its server
    def add_generic_rpc_handlers(self, handlers: Any) -> None:
        self.generic += list(handlers)

    def add_registered_method_handlers(self, service: str, handlers: dict[str, Any]) -> None:
        for name, h in handlers.items():
            self.handlers[f"/{service}/{name}"] = h

    def add(self, add_to_server: Callable[[Any, Any], None], servicer: Any) -> None:
        add_to_server(servicer, self)

    def handler(self, method: str) -> Any:
        h = self.handlers.get(method)
        if h is None:
            for g in self.generic:
                h = g.service(_Details(method))
                if h is not None:
                    self.handlers[method] = h
                    break
        return h if h is not None and h.unary_unary is not None else None

    async def start(self, host: str, port: int) -> int:
        """Listen on (host, port) too (a daemon's storage and OOB addresses); returns the port."""
        loop = asyncio.get_running_loop()
        server = await loop.create_server(lambda: _Connection(self), host, port, reuse_address=True)
        self.servers.append(server)
        return int(server.sockets[0].getsockname()[1])

    async def close(self) -> None:
        for server in self.servers:
            server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), 1.0)
        for conn in list(self.connections):
            conn.abort()

    def call(self, body: memoryview, peer: str) -> tuple[str, Any, FramedContext, Any] | bytes:
        """A frame's call, begun: (its method, handler, context, coroutine), or the answer when there is none."""
        lm, n_meta, lr = REQUEST.unpack_from(body)
        at = REQUEST.size
        method = bytes(body[at: at + lm]).decode()
        metadata, at = unpack_pairs(body, at + lm, n_meta)
        h = self.handler(method)
        if h is None:
            return reply_frame(grpc.StatusCode.UNIMPLEMENTED, f"Method not found: {method}", (), b"")
        ctx = FramedContext(metadata, peer)
        try:
            return method, h, ctx, h.unary_unary(h.request_deserializer(bytes(body[at: at + lr])), ctx)
        except Exception as e:  # noqa: BLE001 - a request that does not parse, as gRPC answers it
            return self.failed(method, ctx, e)

    def answered(self, h: Any, ctx: FramedContext, reply: Any) -> bytes:
        if ctx.code is not grpc.StatusCode.OK:
            return reply_frame(ctx.code, ctx.details, ctx.trailing, b"")
        return reply_frame(grpc.StatusCode.OK, "", ctx.trailing, h.response_serializer(reply))

    @staticmethod
    def failed(method: str, ctx: FramedContext, e: BaseException) -> bytes:
        if isinstance(e, _Aborted):
            return reply_frame(e.code, e.details, ctx.trailing, b"")
        if ctx.code is not grpc.StatusCode.OK:   # set_code before raising: the generated base servicer's way
            return reply_frame(ctx.code, ctx.details, ctx.trailing, b"")
        log.error("%s failed", method, exc_info=e)
        return reply_frame(grpc.StatusCode.UNKNOWN, f"Unexpected {type(e).__name__}: {e}", (), b"")


_ANSWERED = object()   # a call's coroutine has ended (its answer written)


class _Connection(asyncio.Protocol):
    """One client's connection: frames parsed as they arrive, each call begun at once and, if it
    finishes without waiting, answered at once; a call that waits finishes as a task, and the frames
    behind it wait their turn (a connection's calls are answered in order)."""

    def __init__(self, server: FramedServer) -> None:
        self.server = server
        self.buf = bytearray()
        self.transport: asyncio.Transport | None = None
        self.peer = ""
        self.waiting: asyncio.Task[None] | None = None   # the call that waits, if one does

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport   # type: ignore[assignment]
        peer = transport.get_extra_info("peername")
        self.peer = f"ipv4:{peer[0]}:{peer[1]}" if peer else ""
        self.server.connections.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self.server.connections.discard(self)
        if self.waiting is not None:
            self.waiting.cancel()

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()

    def data_received(self, data: bytes) -> None:
        self.buf += data
        if self.waiting is None:
            self._serve()

    def _serve(self) -> None:
        """Answer the whole frames in the buffer, until one's call waits."""
        while self.waiting is None and len(self.buf) >= LENGTH.size:
            (n,) = LENGTH.unpack_from(self.buf)
            if n > MAX_FRAME:
                log.warning("a request frame of %d bytes from %s: closing", n, self.peer)
                self.abort()
                return
            if len(self.buf) < LENGTH.size + n:
                return
            body = memoryview(bytes(self.buf[LENGTH.size: LENGTH.size + n]))
            del self.buf[: LENGTH.size + n]
            begun = self.server.call(body, self.peer)
            if isinstance(begun, bytes):
                self._write(begun)
                continue
            yielded = self._step(*begun)
            if yielded is not _ANSWERED:
                self.waiting = asyncio.get_running_loop().create_task(self._finish(*begun, yielded))

    def _step(self, method: str, h: Any, ctx: FramedContext, coro: Any) -> Any:
        """Run the call's coroutine to its next wait: what it waits for, or `_ANSWERED` once it has ended
        and its answer is written."""
        try:
            return coro.send(None)
        except StopIteration as done:
            self._write(self.server.answered(h, ctx, done.value))
        except Exception as e:  # noqa: BLE001 - as gRPC answers a servicer's unexpected exception
            self._write(self.server.failed(method, ctx, e))
        return _ANSWERED

    async def _finish(self, method: str, h: Any, ctx: FramedContext, coro: Any, yielded: Any) -> None:
        """Go on with a call that waited (for `yielded`, what its first step awaited), as a task would."""
        try:
            while True:
                if yielded is None:
                    await asyncio.sleep(0)   # a bare yield: the loop's turn
                else:
                    # What a task does with a future its coroutine yields: takes it as waited for, then
                    # waits for it to end; its outcome is the call's to see when it goes on.
                    yielded._asyncio_future_blocking = False
                    await asyncio.wait((yielded,))
                yielded = self._step(method, h, ctx, coro)
                if yielded is _ANSWERED:
                    break
        except asyncio.CancelledError:
            coro.close()   # the connection went (or the daemon stops)
            raise
        finally:
            self.waiting = None
        if self.transport is not None and not self.transport.is_closing():
            self._serve()

    def _write(self, frame: bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(frame)
