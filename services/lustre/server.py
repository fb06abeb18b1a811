"""What the MDS and OSS daemons share around their servicers: the twin's gRPC server skeleton
(emulator/grpc_server.py: grpc.aio, health, reflection) on each of the host's addresses, and the worker
threads the blocking model calls run in (the stop on SIGTERM and `main` are emulator/daemon.py's).

A Lustre server answers on two addresses: its storage-network one (`grpc`: clients, the MDS's OSP
polls) and its host's OOB one (`extra["admin"]`: health checks and the admin calls of `twin`). Each is
one server of the skeleton with the same servicer; health is set on both.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import grpc
from grpc_health.v1 import health_pb2

from emulator.daemon_config import DaemonConfig
from emulator.grpc_server import start_server
from services.lustre.wire import CHANNEL_OPTIONS

WORKER_THREADS = 16   # model calls in flight (the store, object file I/O and the NVMe model's waits block)


class Servers:
    """One daemon's gRPC servers (one per address), started with its servicer registered."""

    def __init__(self, servers: list[tuple[grpc.aio.Server, Any]], service: str) -> None:
        self.servers, self.service = servers, service

    @classmethod
    async def start(cls, cfg: DaemonConfig, add: Callable[[Any, grpc.aio.Server], None], servicer: Any,
                    service: str, serving: bool = True) -> Servers:
        """`serving=False`: the service's health says NOT_SERVING until `serving(True)` (a standby)."""
        asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(WORKER_THREADS, "lustre-worker"))
        admin = cfg.extra.get("admin")
        addresses = [cfg.grpc] + ([admin] if admin and admin != cfg.grpc else [])
        servers = [await start_server(a, [(add, servicer, service)], CHANNEL_OPTIONS) for a in addresses]
        self = cls(servers, service)
        await self.serving(serving)
        return self

    async def serving(self, yes: bool) -> None:
        status = health_pb2.HealthCheckResponse.SERVING if yes else health_pb2.HealthCheckResponse.NOT_SERVING
        for _, health in self.servers:
            await health.set(self.service, status)

    async def stop(self, grace: float = 1.0) -> None:
        for _, health in self.servers:
            await health.enter_graceful_shutdown()
        await asyncio.gather(*(server.stop(grace) for server, _ in self.servers))
