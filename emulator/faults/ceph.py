"""Ceph OSD faults, through Ceph's admin client (`Twin.ceph()`), which applies each one and
records it on the monitor (its own log, events/ceph/fault).

    inject("ceph", "osd.4", "out")                   # ceph osd out 4 (clear: ceph osd in 4)
    inject("ceph", "osd.4", "down")                  # ceph osd down 4 (over at its next heartbeat)
    inject("ceph", "osd.4", "stop")                  # the OSD stops: marked down, stays down until cleared
    inject("ceph", "osd.4", "kill")                  # SIGKILL; the supervisor restarts it (over once up)
    inject("ceph", "osd.4", "slow", factor=10)
    inject("ceph", "osd.4", "corrupt", object="NAME", pool="default.rgw.buckets.data")
"""

from __future__ import annotations

import re
from typing import Any

from emulator.errors import TwinRpcError
from emulator.events import FaultPayload
from emulator.faults.backend import Backend, FaultError, Native

NATIVE_TIMEOUT_S = 5.0   # a monitor that does not answer in this leaves Ceph out of a listing
_OSD = re.compile(r"^osd\.(\d+)$")


def osd_id(target: str) -> int | None:
    m = _OSD.match(target)
    return int(m.group(1)) if m else None


class CephFaults(Backend):
    subsystem = "ceph"
    kinds = {"down": "ceph osd down: marked down by the monitor until its next heartbeat",
             "out": "ceph osd out (clear: ceph osd in)",
             "stop": "the OSD daemon stops: marked down, stays down until cleared",
             "kill": "SIGKILL the OSD; the supervisor restarts it",
             "slow": "a slow disk (factor=F > 1)",
             "corrupt": "flip a byte of an object's shard (object=NAME [pool=POOL])"}
    params = {"factor": float, "object": str, "pool": str}
    oneshot = frozenset({"kill"})   # the monitor records a kill as over at once, too

    def present(self) -> str:
        return "" if self.twin.daemons("ceph_mon") else "this twin runs no Ceph: start it with `twin up --ceph`"

    def check(self, target: str, kind: str, params: dict[str, Any]) -> dict[str, Any]:
        out = super().check(target, kind, params)
        osds = sorted(i for d in self.twin.daemons("ceph_osd") if (i := osd_id(d.name)) is not None)
        if osd_id(target) not in osds:
            raise FaultError(f"no OSD {target!r} in this twin (osd.{osds[0]}..osd.{osds[-1]})")
        if kind == "slow" and not out.get("factor", 0) > 1:
            raise FaultError("a slow fault needs factor=F with F > 1 (1 is a healthy disk)")
        if kind == "corrupt" and not out.get("object"):
            raise FaultError("a corrupt fault needs object=NAME (a RADOS object: `twin ceph pg ls`)")
        return out

    def inject(self, target: str, kind: str, params: dict[str, Any]) -> tuple[str, str]:
        pool = {"pool": params["pool"]} if "pool" in params else {}   # else the CephAdmin's default
        with self.twin.ceph() as ceph:
            f = ceph.inject_fault(osd_id(target), kind, factor=params.get("factor", 0.0), obj=params.get("object", ""),
                                  **pool)
        return f.id, f.effect

    def clear(self, fault: FaultPayload) -> str:
        with self.twin.ceph() as ceph:
            mine = {f.id: f for f in ceph.list_faults(include_cleared=True)}.get(fault.backend_id)
            if mine is None or not mine.active:
                return "already over on the monitor"
            try:
                ceph.clear_fault(fault.backend_id, osd=osd_id(fault.target))
            except TwinRpcError as e:
                raise FaultError(f"{fault.target}: {e.details}") from None
        return "cleared"

    def native(self) -> list[Native]:
        with self.twin.ceph(timeout=NATIVE_TIMEOUT_S) as ceph:
            return [Native(f.id, f"osd.{f.osd}", f.kind, f.effect,
                           {k: v for k, v in (("factor", f.factor), ("object", f.object), ("pool", f.pool)) if v})
                    for f in ceph.list_faults()]
