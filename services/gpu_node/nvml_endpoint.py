"""Where libnvidia-ml.so.1 (native/nvml/) reaches its host's GPU-server daemon.

- `GET /nvml` on the daemon's HTTP port (the metrics server, :9400): the node as nvml_snapshot
  renders it. On the loopback network every daemon has its own 127.x address, so the library is
  pointed at one with CLUSTERTWIN_NVML=HOST:PORT (`twin nvml env gpu001` prints it).
- In its emulated host (the netns backend) the daemon also answers on the abstract Unix socket
  `@clustertwin-nvml`. Abstract socket names belong to the network namespace, so a process in
  `twin net exec gpu001` or a Slurm job on gpu001 finds its own host's daemon with no settings,
  as a real process finds its own GPU driver.

Both are the twin's one HTTP server (emulator/http_endpoint.py: HTTP/1.1, one request per
connection), so the library has one client.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from emulator.http_endpoint import serve_unix

LIB_DIR = Path(__file__).resolve().parents[2] / "native" / "nvml" / "build"   # what `make install` builds
LIB_NAME = "libnvidia-ml.so.1"
ABSTRACT_NAME = "\0clustertwin-nvml"
PATH = "/nvml"
CONTENT_TYPE = "text/plain; charset=utf-8"


async def serve_abstract(page: Callable[[], str], name: str = ABSTRACT_NAME) -> asyncio.Server:
    """The `/nvml` page on an abstract Unix socket (of the daemon's network namespace)."""
    return await serve_unix(name, {PATH: lambda: (CONTENT_TYPE, page())})
