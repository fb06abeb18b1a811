"""A minimal asyncio HTTP/1.1 server: one request per connection, a body of at most `max_body` bytes.

The one HTTP server of the twin's daemons: Prometheus `/metrics` pages (`serve`), the fabric's
UFM REST API (`serve_app` with its own handler), the NVML page on an abstract Unix socket
(`serve_unix`), and any other. A full web framework would cost
each of 128 processes memory for nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qs, urlsplit

from emulator import peer

log = logging.getLogger(__name__)

PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"
MAX_BODY = 1 << 20
READ_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Request:
    method: str
    target: str                  # as sent: path and query
    headers: dict[str, str]      # names in lower case
    body: bytes = b""
    peer: Any = None             # the connection's socket, for `peer_uid`

    def peer_uid(self) -> int | None:
        """The caller's uid where this host can tell (emulator/peer.py), else None."""
        return peer.peer_uid(self.peer) if self.peer is not None else None

    @property
    def path(self) -> str:
        return urlsplit(self.target).path

    @property
    def query(self) -> dict[str, str]:
        """The query's parameters (the last of a repeated one)."""
        return {k: v[-1] for k, v in parse_qs(urlsplit(self.target).query).items()}


@dataclass(frozen=True)
class Response:
    status: int
    body: bytes
    content_type: str = "text/plain"
    headers: dict[str, str] = field(default_factory=dict)


class HttpError(Exception):
    """A request refused at the HTTP level (no such path, bad body, ...): its status and why."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.headers = status, message, headers or {}


Handler = Callable[[Request], Awaitable[Response]]
ErrorPage = Callable[[HttpError], Response]   # how an application shows an HttpError


def text_error(e: HttpError) -> Response:
    return Response(e.status, f"{e.message}\n".encode(), "text/plain", e.headers)


async def _read_request(reader: asyncio.StreamReader, max_body: int, sock: Any = None) -> Request:
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout=READ_TIMEOUT_S)
    lines = head.decode("latin-1").split("\r\n")
    method, target, *_ = lines[0].split(" ")
    headers = {}
    for line in lines[1:]:
        k, sep, v = line.partition(":")
        if sep:
            headers[k.strip().lower()] = v.strip()
    length = int(headers.get("content-length", "0") or 0)
    if length > max_body:
        raise HttpError(413, f"body larger than {max_body} bytes")
    body = await asyncio.wait_for(reader.readexactly(length), timeout=READ_TIMEOUT_S) if length else b""
    return Request(method, target, headers, body, sock)


def _encode(r: Response, head_only: bool) -> bytes:
    extra = "".join(f"{k}: {v}\r\n" for k, v in r.headers.items())
    head = (f"HTTP/1.1 {r.status} {HTTPStatus(r.status).phrase}\r\nContent-Type: {r.content_type}\r\n"
            f"Content-Length: {len(r.body)}\r\n{extra}Connection: close\r\n\r\n").encode()
    return head if head_only else head + r.body


async def _answer(handler: Handler, request: Request) -> Response:
    try:
        return await handler(request)
    except HttpError:
        raise
    except Exception as e:  # noqa: BLE001  a bug must not kill the server: answer 500 and log it
        log.exception("HTTP %s %s failed", request.method, request.target)
        raise HttpError(500, f"{type(e).__name__}: {e}") from None


def _connection(handler: Handler, error_page: ErrorPage,
                max_body: int) -> Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]:
    """One connection's exchange: read a request, answer it with `handler`, close. An HttpError (from
    parsing or the handler) is shown with `error_page`; any other exception is a bug: logged, and
    answered 500, the server goes on."""
    async def client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        method = ""
        try:
            try:
                request = await _read_request(reader, max_body, writer.get_extra_info("socket"))
                method = request.method
                response = await _answer(handler, request)
            except HttpError as e:   # refused (a body too large), or a bug (500)
                response = error_page(e)
            writer.write(_encode(response, method == "HEAD"))
            await writer.drain()
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, ValueError,
                ConnectionError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    return client


async def serve_app(host: str, port: int, handler: Handler, error_page: ErrorPage = text_error,
                    max_body: int = MAX_BODY) -> asyncio.Server:
    """Serve `handler` on host:port."""
    return await asyncio.start_server(_connection(handler, error_page, max_body), host, port, reuse_address=True)


Route = Callable[[], tuple[str, str]]  # -> (content type, body)


def pages(routes: dict[str, Route]) -> Handler:
    """Read-only pages (GET and HEAD)."""
    async def pages(request: Request) -> Response:
        if request.method not in ("GET", "HEAD"):
            raise HttpError(405, "method not allowed")
        route = routes.get(request.path)
        if route is None:
            raise HttpError(404, f"no such path {request.path}; try {', '.join(routes)}")
        ctype, body = route()
        return Response(200, body.encode(), ctype)

    return pages


async def serve(host: str, port: int, routes: dict[str, Route]) -> asyncio.Server:
    """Read-only pages on host:port, such as Prometheus `/metrics`."""
    return await serve_app(host, port, pages(routes))


async def serve_unix_app(path: str, handler: Handler, error_page: ErrorPage = text_error,
                         max_body: int = MAX_BODY) -> asyncio.Server:
    """Serve `handler` on a Unix socket (a leading NUL: an abstract name, of the network namespace)."""
    return await asyncio.start_unix_server(_connection(handler, error_page, max_body), path=path)


async def serve_unix(path: str, routes: dict[str, Route]) -> asyncio.Server:
    """Read-only pages on a Unix socket."""
    return await serve_unix_app(path, pages(routes))
