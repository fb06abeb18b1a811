"""The twin's one HTTP server (emulator/http_endpoint.py), as the metrics pages and UFM REST use it:
on loopback, with a real client."""

from __future__ import annotations

import asyncio
import http.client
import json

from emulator.http_endpoint import HttpError, Request, Response, serve, serve_app
from services.fabric.ufm_rest import error_page


def _call(port: int, method: str, path: str, body: bytes | None = None) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request(method, path, body=body)
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


async def _with_server(start, calls):  # noqa: ANN001, ANN202
    server = await start
    port = server.sockets[0].getsockname()[1]
    try:
        return [await asyncio.to_thread(_call, port, *c) for c in calls]
    finally:
        server.close()
        await server.wait_closed()


def test_pages_get_head_404_405() -> None:
    routes = {"/metrics": lambda: ("text/plain", "up 1\n")}
    got = asyncio.run(_with_server(serve("127.0.0.1", 0, routes), [
        ("GET", "/metrics?x=1"), ("HEAD", "/metrics"), ("GET", "/nope"), ("POST", "/metrics", b"x")]))
    assert got[0][0] == 200 and got[0][2] == b"up 1\n"
    assert got[1][0] == 200 and got[1][1]["content-length"] == "5" and got[1][2] == b""
    assert got[2][0] == 404 and b"try /metrics" in got[2][2]
    assert got[3][0] == 405


def test_app_errors_bugs_and_large_bodies() -> None:
    """An HttpError is shown by the app's error page (UFM's JSON), a bug is a 500 and the server goes
    on, a body over the limit is refused before it is read."""
    async def app(request: Request) -> Response:
        if request.path == "/bug":
            raise ZeroDivisionError("oops")
        if request.path == "/auth":
            raise HttpError(401, "who are you", {"WWW-Authenticate": 'Basic realm="UFM"'})
        return Response(200, json.dumps({"q": request.query, "body": request.body.decode()}).encode())

    got = asyncio.run(_with_server(serve_app("127.0.0.1", 0, app, error_page, max_body=16), [
        ("GET", "/bug"), ("GET", "/auth"), ("POST", "/echo?a=1&a=2", b"hello"), ("POST", "/echo", b"x" * 17)]))
    assert got[0][0] == 500 and json.loads(got[0][2]) == {"error": "ZeroDivisionError: oops"}
    assert got[1][0] == 401 and got[1][1]["www-authenticate"] == 'Basic realm="UFM"'
    assert json.loads(got[1][2]) == {"error": "who are you"}
    assert got[2][0] == 200 and json.loads(got[2][2]) == {"q": {"a": "2"}, "body": "hello"}
    assert got[3][0] == 413 and got[3][1]["content-type"] == "application/json"
