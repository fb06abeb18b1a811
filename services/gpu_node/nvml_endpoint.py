"""Where libnvidia-ml.so.1 (native/nvml/) reaches its host's GPU-server daemon.

- `GET /nvml` on the daemon's HTTP port (the metrics server, :9400): the node as nvml_snapshot
  renders it. On the loopback network every daemon has its own 127.x address, so the library is
  pointed at one with CLUSTERTWIN_NVML=HOST:PORT (`twin nvml env gpu001` prints it).
- In its emulated host (the netns backend) the daemon also answers on the abstract Unix socket
  `@clustertwin-nvml`. Abstract socket names belong to the network namespace, so a process in
  `twin net exec gpu001` or a Slurm job on gpu001 finds its own host's daemon with no settings,
  as a real process finds its own GPU driver.
- `POST /nvml/set` on both: NVML's set calls (nvml_control.py) and MIG changes (nvml_mig_control.py),
  one per request, from root only (the caller's uid by SO_PEERCRED, or on loopback TCP by the
  owner of its socket: emulator/peer.py), as the kernel driver checks, not only the library. The
  answer is the call's nvmlReturn_t, `ret N`, and what the call returns besides, if anything (a
  created instance's id: `ret 0 ID`).

Both are the twin's one HTTP server (emulator/http_endpoint.py: HTTP/1.1, one request per
connection), so the library has one client.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

from emulator.http_endpoint import Handler, HttpError, Request, Response, Route, pages, serve_unix_app

LIB_DIR = Path(__file__).resolve().parents[2] / "native" / "nvml" / "build"   # what `make install` builds
LIB_NAME = "libnvidia-ml.so.1"
ABSTRACT_NAME = "\0clustertwin-nvml"
PATH = "/nvml"
SET_PATH = "/nvml/set"
CONTENT_TYPE = "text/plain; charset=utf-8"
NVML_ERROR_NO_PERMISSION = 4

SetCall = Callable[[str], Awaitable[int | tuple[int, ...]]]   # a request body -> nvmlReturn_t [, values]


def handler(routes: dict[str, Route], set_call: SetCall) -> Handler:
    """The read-only pages in `routes`, and NVML's set calls on POST /nvml/set."""
    read = pages(routes)

    async def handle(request: Request) -> Response:
        if request.path != SET_PATH:
            return await read(request)
        if request.method != "POST":
            raise HttpError(405, "method not allowed: POST a set call")
        if request.peer_uid() != 0:   # the driver's own check: a caller that skips the library's is refused too
            return Response(200, f"ret {NVML_ERROR_NO_PERMISSION}\n".encode(), CONTENT_TYPE)
        ret = await set_call(request.body.decode("ascii", "replace"))
        answer = " ".join(map(str, ret if isinstance(ret, tuple) else (ret,)))
        return Response(200, f"ret {answer}\n".encode(), CONTENT_TYPE)

    return handle


async def read_only(body: str) -> int:
    """A server that takes no set calls: as NVML on a device that cannot change (NOT_SUPPORTED)."""
    del body
    return 3


async def serve_abstract(page: Callable[[], str], set_call: SetCall = read_only,
                         name: str = ABSTRACT_NAME) -> asyncio.Server:
    """The `/nvml` page and the set calls on an abstract Unix socket (of the daemon's network namespace)."""
    return await serve_unix_app(name, handler({PATH: lambda: (CONTENT_TYPE, page())}, set_call))
