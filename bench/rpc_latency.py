"""Open-loop RPC latency: requests sent on a fixed schedule (not back to back), so a slow reply
cannot hide queueing delay (no coordinated omission)."""

from __future__ import annotations

import asyncio
import statistics
import time

import grpc

from clustertwin.v1 import gpu_node_pb2 as pb
from clustertwin.v1 import gpu_node_pb2_grpc as pb_grpc


async def _run(address: str, rate: float, seconds: float) -> tuple[list[float], float]:
    latencies: list[float] = []
    async with grpc.aio.insecure_channel(address) as channel:
        stub = pb_grpc.GpuNodeStub(channel)
        await stub.GetGpu(pb.GpuGetGpuRequest(gpu=0), timeout=5)   # warm the connection

        async def one(i: int, due: float) -> None:
            await stub.GetGpu(pb.GpuGetGpuRequest(gpu=i % 8), timeout=5)
            latencies.append(time.perf_counter() - due)   # from when it was due, not when it was sent

        start = time.perf_counter()
        n = int(rate * seconds)
        tasks = []
        for i in range(n):
            due = start + i / rate
            delay = due - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(one(i, due)))
        await asyncio.gather(*tasks)
        elapsed = time.perf_counter() - start
    return latencies, n / elapsed


def measure_latency(address: str, rate: float, seconds: float, repeats: int) -> dict[str, float]:
    p50s, p99s, rps = [], [], []
    for _ in range(repeats):
        lat, achieved = asyncio.run(_run(address, rate, seconds))
        q = statistics.quantiles(lat, n=100)
        p50s.append(q[49] * 1000)
        p99s.append(q[98] * 1000)
        rps.append(achieved)
    return {"p50_ms": statistics.median(p50s), "p99_ms": statistics.median(p99s),
            "achieved_rps": statistics.median(rps)}
