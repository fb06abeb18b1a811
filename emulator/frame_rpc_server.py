"""The server's end of framed unary calls (frame_rpc.py): a listener beside a daemon's gRPC server that
answers the same servicer's unary methods, on the daemon's event loop.

The methods are found as gRPC finds them: the generated `add_<Service>Servicer_to_server` hands its
method handlers to this server as it would to a `grpc.aio.Server`. Each call runs the servicer's
coroutine with a context that has what the twin's servicers use of gRPC's (the caller's metadata,
trailing metadata, abort); an abort answers with its code, details and trailing metadata, as gRPC
would. A connection's calls are answered in order, one at a time (its client waits for each);
calls on different connections run concurrently, as gRPC's do.
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
        server = await asyncio.start_server(self._serve, host, port, reuse_address=True)
        self.servers.append(server)
        return int(server.sockets[0].getsockname()[1])

    async def close(self) -> None:
        for server in self.servers:
            server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), 1.0)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        where = f"ipv4:{peer[0]}:{peer[1]}" if peer else ""
        try:
            while True:
                (n,) = LENGTH.unpack(await reader.readexactly(LENGTH.size))
                if n > MAX_FRAME:
                    log.warning("a request frame of %d bytes from %s: closing", n, where)
                    return
                writer.write(await self._answer(memoryview(await reader.readexactly(n)), where))
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        except asyncio.CancelledError:
            pass   # the daemon stopping with this connection open
        finally:
            writer.close()

    async def _answer(self, body: memoryview, peer: str) -> bytes:
        lm, n_meta, lr = REQUEST.unpack_from(body)
        at = REQUEST.size
        method = bytes(body[at: at + lm]).decode()
        metadata, at = unpack_pairs(body, at + lm, n_meta)
        h = self.handler(method)
        if h is None:
            return reply_frame(grpc.StatusCode.UNIMPLEMENTED, f"Method not found: {method}", (), b"")
        ctx = FramedContext(metadata, peer)
        try:
            request = h.request_deserializer(bytes(body[at: at + lr]))
            reply = await h.unary_unary(request, ctx)
            if ctx.code is not grpc.StatusCode.OK:
                return reply_frame(ctx.code, ctx.details, ctx.trailing, b"")
            return reply_frame(grpc.StatusCode.OK, "", ctx.trailing, h.response_serializer(reply))
        except _Aborted as a:
            return reply_frame(a.code, a.details, ctx.trailing, b"")
        except Exception as e:  # noqa: BLE001 - as gRPC answers a servicer's unexpected exception
            if ctx.code is not grpc.StatusCode.OK:   # set_code before raising: the generated base servicer's way
                return reply_frame(ctx.code, ctx.details, ctx.trailing, b"")
            log.exception("%s failed", method)
            return reply_frame(grpc.StatusCode.UNKNOWN, f"Unexpected {type(e).__name__}: {e}", (), b"")
