"""The GRES each GPU server of a running twin offers now, read over its gRPC API.

The topology only says how the servers boot (which ones start with MIG and in which layout); an
operator may have changed MIG since (`twin gpu mig ...`). Slurm must offer what the hardware has
at `twin slurm up`, as NVML autodetection would: a GPU without MIG is one `gpu:h100`, a MIG GPU is
one typed GRES per compute instance (`nvidia_h100_80gb_hbm3_1g.10gb`), a MIG GPU without
instances offers nothing.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from emulator.manifest import DaemonEntry, Manifest
from emulator.sdk.gpu_node import GpuNodeClient
from services.slurm.config import GPU_TYPE, mig_type

GresCounts = list[tuple[str, int]]  # [(gres type, count)], in the order first seen


def server_gres(client: GpuNodeClient) -> GresCounts:
    counts: dict[str, int] = {}
    for gpu in client.gpus():
        if not gpu.mig_enabled:
            counts[GPU_TYPE] = counts.get(GPU_TYPE, 0) + 1
            continue
        for gi in client.gpu_instances(gpu.index):
            for ci in gi.compute_instances:
                t = mig_type(ci.profile or gi.profile)
                counts[t] = counts.get(t, 0) + 1
    return list(counts.items())


def live_gres(manifest: Manifest, timeout: float = 10.0) -> dict[str, GresCounts]:
    """Node name → its GRES counts, for every GPU server in the twin's manifest (queried in
    parallel: su-1024 has 128). Raises `TwinRpcError` when a server does not answer."""
    servers = manifest.daemons_of("gpu_node")

    def one(d: DaemonEntry) -> tuple[str, GresCounts]:
        client = GpuNodeClient(d.name, d.grpc, timeout=timeout)
        try:
            return d.name, server_gres(client)
        finally:
            client.close()

    with ThreadPoolExecutor(max_workers=min(32, len(servers) or 1)) as pool:
        return dict(pool.map(one, servers))
