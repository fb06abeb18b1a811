"""`Topology`: a validated topology file and what follows from it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from emulator.errors import NotFound
from emulator.topology.derive import DerivedFigures, derive
from emulator.topology.schema import TopologySpec
from emulator.topology.servers import GpuServerSpec, build_gpu_servers


@dataclass(frozen=True)
class Topology:
    spec: TopologySpec  # the file as parsed: every section, for code that needs more detail
    source: Path
    gpu_servers: list[GpuServerSpec] = field(init=False, hash=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "gpu_servers", build_gpu_servers(self.spec))

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def management_nodes(self) -> list[str]:
        return [node.name for node in self.spec.management_nodes]

    def server(self, name: str) -> GpuServerSpec:
        for server in self.gpu_servers:
            if server.name == name:
                return server
        raise NotFound(f"no GPU server {name!r} in topology {self.name!r}")

    def derive(self) -> DerivedFigures:
        return derive(self.spec)
