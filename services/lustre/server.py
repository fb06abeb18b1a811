"""What the MDS and OSS daemons share around their servicers, on the twin's daemon skeleton
(emulator/daemon.py: grpc.aio with health and reflection, the worker threads, the stop on SIGTERM):
the worker threads the blocking model calls run in, and the host's two addresses.

A Lustre server answers on two addresses: its storage-network one (`grpc`: clients, the MDS's OSP
polls) and its host's OOB one (`spec.admin`: health checks and the admin calls of `twin`). Each is
one server of the skeleton with the same servicer; health is set on both.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc

from emulator.daemon import TwinDaemon
from services.lustre.daemon_spec import LustreServerSpec
from services.lustre.wire import CHANNEL_OPTIONS

WORKER_THREADS = 16   # model calls in flight (the store, object file I/O and the NVMe model's waits block)


class LustreDaemon(TwinDaemon):
    worker_threads = WORKER_THREADS
    thread_name = "lustre-worker"

    async def start_service(self, add: Callable[[Any, grpc.aio.Server], None], servicer: Any, service: str,
                            serving: bool = True) -> None:
        """The servicer on both addresses; `serving=False`: its health says NOT_SERVING until
        `set_serving(True)` (a standby)."""
        admin = LustreServerSpec.of(self.cfg).admin
        await self.start_grpc([(add, servicer, service)], addresses=[admin] if admin and admin != self.cfg.grpc else [],
                              options=CHANNEL_OPTIONS, serving=serving)
