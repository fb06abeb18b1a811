"""gRPC health checks of many daemons at once (from outside the supervisor)."""

from __future__ import annotations

import asyncio

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

SERVING = "SERVING"
UNREACHABLE = "UNREACHABLE"


async def _check(address: str, timeout: float) -> str:
    async with grpc.aio.insecure_channel(address) as channel:
        try:
            reply = await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=timeout)
        except grpc.aio.AioRpcError:
            return UNREACHABLE
        return health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)


async def check_many(addresses: list[str], timeout: float = 1.0, concurrency: int = 64) -> dict[str, str]:
    gate = asyncio.Semaphore(concurrency)

    async def one(address: str) -> tuple[str, str]:
        async with gate:
            return address, await _check(address, timeout)

    return dict(await asyncio.gather(*(one(a) for a in addresses)))


def check_all(addresses: list[str], timeout: float = 1.0) -> dict[str, str]:
    return asyncio.run(check_many(addresses, timeout))
