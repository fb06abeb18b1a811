"""`services.slurm.healthcheck.problems`: which GPU states drain a node, and the reason text (pure)."""

from __future__ import annotations

from clustertwin.v1 import gpu_node_pb2 as pb
from services.slurm.healthcheck import auto_interval, problems


def xid(gpu: int, number: int, active: bool = True) -> pb.GpuFault:
    return pb.GpuFault(kind=pb.GPU_FAULT_KIND_XID, gpu=gpu, xid=number, active=active)


def test_fatal_xids_drain_with_number_gpu_and_meaning() -> None:
    assert problems([], [xid(3, 79)]) == ["Xid 79 on GPU 3 (GPU has fallen off the bus)"]
    assert problems([], [xid(5, 48), xid(1, 95)]) == ["Xid 95 on GPU 1 (Uncontained ECC error)",
                                                      "Xid 48 on GPU 5 (Double-bit ECC error)"]


def test_application_xids_warnings_and_cleared_faults_do_not_drain() -> None:
    faults = [xid(0, 13), xid(1, 31), xid(2, 63), xid(3, 92), xid(4, 79, active=False),
              pb.GpuFault(kind=pb.GPU_FAULT_KIND_THERMAL_SLOWDOWN, gpu=5, active=True)]
    assert problems([pb.GpuInfo(index=i) for i in range(8)], faults) == []


def test_a_lost_gpu_drains_even_without_its_fault_record() -> None:
    assert problems([pb.GpuInfo(index=6, lost=True)], []) == ["Xid 79 on GPU 6 (GPU has fallen off the bus)"]
    assert problems([pb.GpuInfo(index=6, lost=True)], [xid(6, 79)]) == ["Xid 79 on GPU 6 (GPU has fallen off the bus)"]


def test_interval_is_five_seconds_unless_the_checks_would_crowd_the_cores() -> None:
    assert auto_interval(4, cpus=2) == 5
    assert auto_interval(128, cpus=2) == 64
    assert auto_interval(128, cpus=64) == 5
