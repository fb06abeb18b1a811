"""Every active fault of a twin, across its subsystems: `Twin.faults()`.

    for f in twin.faults().list():
        print(f.subsystem, f.target, f.id, f.kind, f.effect)

GPU faults (each GPU server's fault log), Ceph OSD faults (the monitor's), network faults (the
supervisor's log; `--network netns` only) and Lustre's OSSs kept down. Each subsystem still injects
and clears its own (`twin.gpu_node(n)`, `twin.ceph()`, `twin.network()`, `twin.lustre()`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from clustertwin.v1 import gpu_node_pb2


@dataclass(frozen=True)
class TwinFault:
    subsystem: str   # gpu, ceph, network, lustre
    target: str      # gpu001 GPU 3, osd.4, ib-leaf01, oss01, ...
    id: str
    kind: str
    active: bool
    effect: str


class TwinView(Protocol):
    """What this needs of `emulator.client.Twin` (not imported: the Twin imports this module)."""

    manifest: dict[str, Any]
    gpu_nodes: list[str]

    def gpu_node(self, name: str) -> Any: ...
    def daemons(self, kind: str | None = None) -> list[dict[str, Any]]: ...
    def ceph(self) -> Any: ...
    def network(self) -> Any: ...
    def lustre(self) -> Any: ...


class FaultsClient:
    def __init__(self, twin: TwinView) -> None:
        self.twin = twin

    def list(self, include_cleared: bool = False) -> list[TwinFault]:
        return [*self.gpu(include_cleared), *self.ceph(include_cleared), *self.network(include_cleared),
                *self.lustre()]

    def gpu(self, include_cleared: bool = False) -> list[TwinFault]:
        out = []
        for name in self.twin.gpu_nodes:
            for f in self.twin.gpu_node(name).faults(include_cleared=include_cleared):
                kind = gpu_node_pb2.FaultKind.Name(f.kind).removeprefix("FAULT_KIND_").lower()
                out.append(TwinFault("gpu", f"{name} GPU {f.gpu}", f.id, f"xid {f.xid}" if f.xid else kind, f.active,
                                     f.effect))
        return out

    def ceph(self, include_cleared: bool = False) -> list[TwinFault]:
        if not self.twin.daemons("ceph_mon"):
            return []
        with self.twin.ceph() as ceph:
            return [TwinFault("ceph", f"osd.{f.osd}", f.id, f.kind, f.active, f.effect)
                    for f in ceph.osd_faults(include_cleared)]

    def network(self, include_cleared: bool = False) -> list[TwinFault]:
        if not self.twin.manifest.get("network_backend"):
            return []
        return [TwinFault("network", f.target, f.id, f.kind, f.active,
                          ", ".join(f"{k}={v}" for k, v in f.detail.items()))
                for f in self.twin.network().faults(include_cleared)]

    def lustre(self) -> list[TwinFault]:
        if not self.twin.manifest.get("lustre"):
            return []
        with self.twin.lustre() as lu:
            return [TwinFault("lustre", f["target"], f["id"], f["kind"], True, f["effect"]) for f in lu.faults()]
