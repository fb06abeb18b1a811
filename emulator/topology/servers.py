"""`GpuServerSpec`: one GPU server as the rest of the twin sees it (name, place, identity)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from emulator.topology import cabling, naming
from emulator.topology.schema import TopologySpec


@dataclass(frozen=True)
class GpuServerSpec:
    name: str  # "gpu001".."gpu128"
    index: int  # 0-based position in the topology
    rack: str  # "r01".."r32"; servers in a rack are consecutive
    leaf_pair: tuple[str, str]  # the two compute leaves its NICs split across
    mig_layout: str | None  # a name from MIG_LAYOUTS, or None for whole-GPU use
    pci_bus_ids: list[str] = field(hash=False)
    driver_version: str
    cuda_version: str
    gpu_count: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready; the supervisor hands this to the GPU-server daemon."""
        return {
            "name": self.name,
            "index": self.index,
            "rack": self.rack,
            "leaf_pair": list(self.leaf_pair),
            "mig_layout": self.mig_layout,
            "pci_bus_ids": list(self.pci_bus_ids),
            "driver_version": self.driver_version,
            "cuda_version": self.cuda_version,
            "gpu_count": self.gpu_count,
        }


def build_gpu_servers(spec: TopologySpec) -> list[GpuServerSpec]:
    """Every GPU server in order. Assumes `spec` passed the consistency checks."""
    count, per_rack = spec.servers.count, spec.servers.per_rack
    racks = count // per_rack
    leaves = naming.series(naming.COMPUTE_LEAF, spec.compute.leaves)
    first_mig = count - (spec.mig.last_servers if spec.mig else 0)
    gpu = spec.gpu_server
    servers = []
    for i in range(count):
        pair = cabling.leaf_pair_of(spec.compute, i)
        servers.append(
            GpuServerSpec(
                name=naming.gpu_server(i, count),
                index=i,
                rack=naming.rack(i // per_rack, racks),
                leaf_pair=(leaves[2 * pair], leaves[2 * pair + 1]),
                mig_layout=spec.mig.layout if spec.mig and i >= first_mig else None,
                pci_bus_ids=list(gpu.pci_bus_ids),
                driver_version=gpu.driver_version,
                cuda_version=gpu.cuda_version,
                gpu_count=gpu.gpus_per_server,
            )
        )
    return servers
