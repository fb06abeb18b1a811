"""OSD faults for `twin fault inject|clear|list osd.N ...`, through the Ceph admin calls (cli/ceph.py).

Each fault is applied first (the OSD daemon's SetFault, a SIGKILL, the monitor's `osd out`, a
corrupted chunk), then recorded on the monitor (`RecordFault`), which keeps it for `twin fault list`
and publishes it on the bus. Clearing undoes it: start the OSD, heal the disk (factor 1), mark it in,
or repair the corrupted object's PG; a kill is over when the supervisor has restarted the daemon.
"""

from __future__ import annotations

import re
from pathlib import Path

from clustertwin.v1 import ceph_pb2 as pb
from emulator.cli.common import fail, user_errors
from emulator.rundir import RunDirError

KINDS = ("stop", "kill", "slow", "corrupt", "out")
_OSD = re.compile(r"^osd\.(\d+)$")


def is_osd(node: str) -> bool:
    return bool(_OSD.match(node))


def _osd(node: str) -> int:
    return int(_OSD.match(node).group(1))  # type: ignore[union-attr]


def inject(run_dir: Path, node: str, kind: str, factor: float = 0.0, obj: str = "",
           pool: str = "default.rgw.buckets.data") -> pb.CephFault:
    from emulator.cli.ceph import admin
    osd = _osd(node)
    if kind not in KINDS:
        fail(f"an OSD fault needs --kind {'|'.join(KINDS)}" + (f", not {kind!r}" if kind else ""))
    if kind == "slow" and not factor > 1:
        fail("--kind slow needs --factor F with F > 1 (1 is a healthy disk)")
    if kind == "corrupt" and not obj:
        fail("--kind corrupt needs --object NAME (a RADOS object: `twin ceph pg ls`, the gateway's names)")
    a = admin(run_dir)
    with user_errors():
        a.osd_entry(osd)   # KeyError → a clear "there is no osd.N"
        if kind == "stop":
            a.osd(osd, "SetFault", pb.SetFaultRequest(stopped=True))
            effect = "stopped: marked down at once, refuses I/O, stays down until cleared"
        elif kind == "kill":
            pid = a.kill(node)
            effect = f"killed (pid {pid}) with SIGKILL; the supervisor restarts it"
        elif kind == "slow":
            st = a.osd(osd, "SetFault", pb.SetFaultRequest(slow_factor=factor))
            effect = f"slow disk: every chunk call takes {st.slow_factor:g}x the {st.model.device_class} model"
        elif kind == "out":
            effect = a.call("OsdCommand", pb.OsdCommandRequest(osd=osd, command="out")).message.strip()
        else:
            r = a.call("CorruptChunk", pb.CorruptChunkRequest(pool=pool, object=obj, osd=osd))
            effect = f"corrupted shard {r.shard} of {obj!r} (pg {r.pg})"
        return a.call("RecordFault", pb.FaultRecordRequest(fault=pb.CephFault(
            kind=kind, osd=osd, factor=factor, pool=pool if kind == "corrupt" else "", object=obj, effect=effect)))


def clear(run_dir: Path, node: str, fault_id: str) -> pb.CephFault:
    from emulator.cli.ceph import admin
    osd = _osd(node)
    a = admin(run_dir)
    with user_errors():
        known = {f.id: f for f in a.call("ListFaults", pb.FaultListRequest(include_cleared=True)).faults}
        f = known.get(fault_id)
        if f is None or f.osd != osd:
            raise KeyError(f"no fault {fault_id!r} on {node} (see `twin fault list`)")
        if f.active:
            if f.kind == "stop":
                a.osd(osd, "SetFault", pb.SetFaultRequest(stopped=False))
            elif f.kind == "slow":
                a.osd(osd, "SetFault", pb.SetFaultRequest(slow_factor=1.0))
            elif f.kind == "out":
                a.call("OsdCommand", pb.OsdCommandRequest(osd=osd, command="in"))
            elif f.kind == "corrupt":
                pg = a.call("Pgs", pb.PgsRequest(pool=f.pool, object=f.object)).pgs[0].pgid
                a.call("Scrub", pb.ScrubRequest(pg=pg, repair=True))
        return a.call("ClearFault", pb.FaultClearRequest(id=fault_id))


def faults(run_dir: Path, include_cleared: bool) -> list[pb.CephFault]:
    """The twin's OSD faults; none if it runs no Ceph."""
    from emulator.cli.ceph import CephAdmin
    try:
        a = CephAdmin(run_dir)
    except RunDirError:
        return []
    return list(a.call("ListFaults", pb.FaultListRequest(include_cleared=include_cleared)).faults)
