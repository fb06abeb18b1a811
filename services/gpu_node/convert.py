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


def node(v: NodeView) -> pb.NodeInfo:
    return pb.NodeInfo(**vars(v))


def gpu(v: GpuView) -> pb.GpuInfo:
    # Shallow by hand: dataclasses.asdict deep-copies and dominated the query RPCs' cost.
    d = dict(vars(v))
    d["ecc"] = pb.EccCounters(**vars(v.ecc))
    d["nvlinks"] = [pb.NvLink(**vars(link)) for link in v.nvlinks]
    return pb.GpuInfo(**d)


def mig_profile(v: MigProfileView) -> pb.MigProfile:
    return pb.MigProfile(**dataclasses.asdict(v))


def gpu_instance(v: GpuInstanceView) -> pb.GpuInstance:
    return pb.GpuInstance(**dataclasses.asdict(v))


def compute_instance(v: ComputeInstanceView) -> pb.ComputeInstance:
    return pb.ComputeInstance(**dataclasses.asdict(v))


def lease(r: Lease) -> pb.Lease:
    d = dataclasses.asdict(r)
    d.pop("pid")  # internal: only the kernel log shows it
    return pb.Lease(**d)


def fault(r: Fault) -> pb.Fault:
    d = dataclasses.asdict(r)
    d["kind"] = pb.FaultKind.Value(f"FAULT_KIND_{r.kind}")
    return pb.Fault(**d)


def fault_kind(kind: int) -> str:
    """Proto enum → model kind name ("XID", ...); unknown numbers pass through for the model to refuse."""
    try:
        return pb.FaultKind.Name(kind).removeprefix("FAULT_KIND_")
    except ValueError:
        return str(kind)


def event(e: dict[str, Any]) -> pb.Event:
    health = pb.Health.Value(f"HEALTH_{e['health']}") if e.get("health") else pb.HEALTH_UNSPECIFIED
    return pb.Event(
        seq=e["seq"], time=e["time"], node=e["node"], kind=e["kind"], gpu=e["gpu"], xid=e["xid"],
        lease_id=e["lease_id"], health=health, message=e["message"],
    )


def topology(t: TopoMatrix) -> pb.TopologyMatrix:
    return pb.TopologyMatrix(
        labels=t.labels,
        rows=[
            pb.TopologyRow(label=r.label, cells=r.cells, cpu_affinity=r.cpu_affinity, numa_affinity=r.numa_affinity)
            for r in t.rows
        ],
        text=t.text,
    )
