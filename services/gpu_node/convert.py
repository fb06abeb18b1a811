"""Model views and records → proto messages (field names match, so this stays mechanical)."""

from __future__ import annotations

import dataclasses
from typing import Any

from clustertwin.v1 import gpu_node_pb2 as pb
from services.gpu_node.records import Fault, Lease
from services.gpu_node.topo_matrix import TopoMatrix
from services.gpu_node.views import (
    ComputeInstanceView,
    GpuInstanceView,
    GpuView,
    MigProfileView,
    NodeView,
)


def node(v: NodeView) -> pb.GpuNodeInfo:
    return pb.GpuNodeInfo(**vars(v))


def gpu(v: GpuView) -> pb.GpuInfo:
    # Shallow by hand: dataclasses.asdict deep-copies and dominated the query RPCs' cost.
    d = dict(vars(v))
    d["ecc"] = pb.GpuEccCounters(**vars(v.ecc))
    d["nvlinks"] = [pb.GpuNvLink(**vars(link)) for link in v.nvlinks]
    return pb.GpuInfo(**d)


def mig_profile(v: MigProfileView) -> pb.GpuMigProfile:
    return pb.GpuMigProfile(**dataclasses.asdict(v))


def gpu_instance(v: GpuInstanceView) -> pb.GpuInstance:
    return pb.GpuInstance(**dataclasses.asdict(v))


def compute_instance(v: ComputeInstanceView) -> pb.GpuComputeInstance:
    return pb.GpuComputeInstance(**dataclasses.asdict(v))


def lease(r: Lease) -> pb.GpuLease:
    return pb.GpuLease(**dataclasses.asdict(r))


def fault(r: Fault) -> pb.GpuFault:
    d = dataclasses.asdict(r)
    d["kind"] = pb.GpuFaultKind.Value(f"GPU_FAULT_KIND_{r.kind}")
    return pb.GpuFault(**d)


def fault_kind(kind: int) -> str:
    """Proto enum → model kind name ("XID", ...); unknown numbers pass through for the model to refuse."""
    try:
        return pb.GpuFaultKind.Name(kind).removeprefix("GPU_FAULT_KIND_")
    except ValueError:
        return str(kind)


def event(e: dict[str, Any]) -> pb.GpuEvent:
    health = pb.GpuHealth.Value(f"GPU_HEALTH_{e['health']}") if e.get("health") else pb.GPU_HEALTH_UNSPECIFIED
    return pb.GpuEvent(
        seq=e["seq"], time=e["time"], node=e["node"], kind=e["kind"], gpu=e["gpu"], xid=e["xid"],
        lease_id=e["lease_id"], health=health, message=e["message"],
    )


def topology(t: TopoMatrix) -> pb.GpuTopologyMatrix:
    return pb.GpuTopologyMatrix(
        labels=t.labels,
        rows=[
            pb.GpuTopologyRow(label=r.label, cells=r.cells, cpu_affinity=r.cpu_affinity, numa_affinity=r.numa_affinity)
            for r in t.rows
        ],
    )
