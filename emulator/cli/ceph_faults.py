"""OSD faults for `twin fault inject|clear|list osd.N ...`: the CLI's side of `CephAdmin.inject_osd_fault`,
`clear_osd_fault` and `osd_faults` (services/ceph/sdk.py), which apply each fault, record it on the
monitor (for `twin fault list` and the bus) and undo it.
"""

from __future__ import annotations

import re
from pathlib import Path

from clustertwin.v1 import ceph_pb2 as pb
from emulator.cli.common import user_errors
from emulator.rundir import RunDirError
from services.ceph.sdk import OSD_FAULT_KINDS as KINDS
from services.ceph.sdk import CephAdmin

__all__ = ["KINDS", "clear", "faults", "inject", "is_osd"]

_OSD = re.compile(r"^osd\.(\d+)$")


def is_osd(node: str) -> bool:
    return bool(_OSD.match(node))


def _osd(node: str) -> int:
    return int(_OSD.match(node).group(1))  # type: ignore[union-attr]


def inject(run_dir: Path, node: str, kind: str, factor: float = 0.0, obj: str = "",
           pool: str = "default.rgw.buckets.data") -> pb.CephFault:
    with user_errors():
        return CephAdmin(run_dir).inject_osd_fault(_osd(node), kind, factor=factor, obj=obj, pool=pool)


def clear(run_dir: Path, node: str, fault_id: str) -> pb.CephFault:
    with user_errors():
        return CephAdmin(run_dir).clear_osd_fault(fault_id, osd=_osd(node))


def faults(run_dir: Path, include_cleared: bool) -> list[pb.CephFault]:
    """The twin's OSD faults; none if it runs no Ceph."""
    try:
        a = CephAdmin(run_dir)
    except RunDirError:
        return []
    return a.osd_faults(include_cleared)
