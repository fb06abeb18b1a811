"""A minimal asyncio HTTP/1.1 endpoint for read-only pages such as Prometheus `/metrics`.

Daemons serve a handful of GET routes; a full web framework would cost each of 128 processes
memory for nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

Route = Callable[[], tuple[str, str]]  # -> (content type, body)

PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"


async def serve(host: str, port: int, routes: dict[str, Route]) -> asyncio.Server:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout=10)
            method, target, *_ = request.split(b"\r\n", 1)[0].decode("latin-1").split(" ")
            path = target.split("?", 1)[0]
            if method not in ("GET", "HEAD"):
                status, ctype, body = "405 Method Not Allowed", "text/plain", "method not allowed\n"
            elif path in routes:
                status = "200 OK"
                ctype, body = routes[path]()
            else:
                status, ctype, body = "404 Not Found", "text/plain", f"no such path {path}; try {', '.join(routes)}\n"
            data = body.encode()
            head = (f"HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {len(data)}\r\n"
                    "Connection: close\r\n\r\n").encode()
            writer.write(head if method == "HEAD" else head + data)
            await writer.drain()
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, ValueError,
                ConnectionError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    return await asyncio.start_server(handle, host, port, reuse_address=True)
