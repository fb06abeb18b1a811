"""Where libnvidia-ml.so.1 (native/nvml/) reaches its host's GPU-server daemon.

- `GET /nvml` on the daemon's HTTP port (the metrics server, :9400): the node as nvml_snapshot
  renders it. On the loopback network every daemon has its own 127.x address, so the library is
  pointed at one with CLUSTERTWIN_NVML=HOST:PORT (`twin nvml env gpu001` prints it).
- In its emulated host (the netns backend) the daemon also answers on the abstract Unix socket
  `@clustertwin-nvml`. Abstract socket names belong to the network namespace, so a process in
  `twin net exec gpu001` or a Slurm job on gpu001 finds its own host's daemon with no settings,
  as a real process finds its own GPU driver.

Both speak the same HTTP/1.1 (one request per connection), so the library has one client.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

log = logging.getLogger(__name__)

ABSTRACT_NAME = "\0clustertwin-nvml"
PATH = "/nvml"
CONTENT_TYPE = "text/plain; charset=utf-8"
MAX_HEAD = 8192


def _response(status: str, body: bytes) -> bytes:
    return (f"HTTP/1.1 {status}\r\nContent-Type: {CONTENT_TYPE}\r\nContent-Length: {len(body)}\r\n"
            f"Connection: close\r\n\r\n").encode() + body


async def serve_abstract(page: Callable[[], str], name: str = ABSTRACT_NAME) -> asyncio.AbstractServer:
    """The `/nvml` page on an abstract Unix socket (of the daemon's network namespace)."""
    async def client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout=10.0)
            method, target, *_ = head[:MAX_HEAD].decode("latin-1").split(" ", 2)
            if method == "GET" and target.split("?")[0] == PATH:
                writer.write(_response("200 OK", page().encode()))
            else:
                writer.write(_response("404 Not Found", f"no such path {target}; try {PATH}\n".encode()))
            await writer.drain()
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, ValueError, ConnectionError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    return await asyncio.start_unix_server(client, path=name)
