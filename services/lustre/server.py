"""What the MDS and OSS daemons share around their servicers, on the twin's daemon skeleton
(emulator/daemon.py: grpc.aio with health and reflection, the worker threads, the stop on SIGTERM):
the worker threads the blocking model calls run in, and the host's two addresses.

A Lustre server answers on two addresses: its storage-network one (`grpc`: clients, the MDS's OSP
polls) and its host's OOB one (`spec.admin`: health checks and the admin calls of `twin`). Each is
one server of the skeleton with the same servicer; health is set on both. The clients' unary calls
also arrive as framed calls (emulator/frame_rpc.py: the same servicer without HTTP/2) on a port
beside each: the MDS's gRPC port + 1, an OSS's + 2 (+ 1 is its bulk port).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc

from emulator.daemon import TwinDaemon
from emulator.frame_rpc import framed_address
from emulator.frame_rpc_server import FramedServer
from services.lustre.daemon_spec import LustreServerSpec
from services.lustre.wire import CHANNEL_OPTIONS

WORKER_THREADS = 16   # model calls in flight (the store, object file I/O and the NVMe model's waits block)


class LustreDaemon(TwinDaemon):
    worker_threads = WORKER_THREADS
    thread_name = "lustre-worker"

    framed: FramedServer | None = None

    async def start_service(self, add: Callable[[Any, grpc.aio.Server], None], servicer: Any, service: str,
                            serving: bool = True, framed_offset: int | None = None) -> None:
        """The servicer on both addresses; `serving=False`: its health says NOT_SERVING until
        `set_serving(True)` (a standby). `framed_offset`: its unary calls also as framed calls
        (emulator/frame_rpc.py) on each address's port + the offset, what the clients call."""
        admin = LustreServerSpec.of(self.cfg).admin
        await self.start_grpc([(add, servicer, service)], addresses=[admin] if admin and admin != self.cfg.grpc else [],
                              options=CHANNEL_OPTIONS, serving=serving)
        if framed_offset is not None:
            self.framed = FramedServer()
            self.framed.add(add, servicer)
            for address in dict.fromkeys(a for a in (self.cfg.grpc, admin) if a):
                await self.framed.start(*framed_address(address, framed_offset))

    async def close_framed(self) -> None:
        if self.framed is not None:
            await self.framed.close()
