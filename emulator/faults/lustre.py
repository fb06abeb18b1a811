"""Lustre faults, through Lustre's admin client (`Twin.lustre()`: each fault kept by the OSS it hits,
with its id) and the supervisor's record of each server's process.

    inject("lustre", "oss01", "oss-kill")     # the OSS dies and stays down; its partner serves its OSTs
    inject("lustre", "OST0001", "ost-full")   # the OST is full: growing writes get ENOSPC
    inject("lustre", "mds01", "mds-kill")     # SIGKILL an MDS; the standby takes the MDT over if it was active
"""

from __future__ import annotations

import re
from typing import Any

from emulator.events import FaultPayload
from emulator.faults.backend import Backend, FaultError, Native
from emulator.rundir import RunDirError
from emulator.sdk import daemons

_OST = re.compile(r"^(?:[\w]+-)?OST([0-9a-f]{4})$")


class LustreFaults(Backend):
    subsystem = "lustre"
    kinds = {"oss-kill": "kill an OSS and keep it down (its failover partner takes its OSTs)",
             "ost-full": "fill an OST (target OSTxxxx): growing writes get ENOSPC",
             "mds-kill": "SIGKILL an MDS; the supervisor restarts it (as the standby, if the other took over)"}
    oneshot = frozenset({"mds-kill"})

    def present(self) -> str:
        return "" if self.twin.manifest.section("lustre") is not None else \
            "this twin runs no Lustre: start it with `twin up TOPOLOGY --lustre`"

    def _names(self, kind: str) -> list[str]:
        return sorted(d.name for d in self.twin.daemons(kind))

    def _ost(self, target: str) -> int | None:
        m = _OST.match(target)
        return int(m.group(1), 16) if m else None

    def check(self, target: str, kind: str, params: dict[str, Any]) -> dict[str, Any]:
        out = super().check(target, kind, params)
        if kind == "ost-full":
            with self.twin.lustre() as lu:
                known = sorted(lu.osts)
            if self._ost(target) not in known:
                raise FaultError(f"no OST {target!r} in this filesystem (OST{known[0]:04x}..OST{known[-1]:04x})")
            return out
        names = self._names("lustre_oss" if kind == "oss-kill" else "lustre_mds")
        if target not in names:
            raise FaultError(f"no {'OSS' if kind == 'oss-kill' else 'MDS'} named {target!r}: this twin's are "
                             f"{', '.join(names)}")
        if kind == "oss-kill" and any(n.target == target and n.kind == "oss-kill" for n in self.native()):
            raise FaultError(f"{target} is already kept down")
        return out

    def inject(self, target: str, kind: str, params: dict[str, Any]) -> tuple[str, str]:
        try:
            if kind == "mds-kill":
                return "", f"{target} killed (pid {daemons.kill(self.twin.run, target)}); it restarts, the " \
                           "standby serving the MDT if this one was active"
            with self.twin.lustre() as lu:
                if kind == "ost-full":
                    f = lu.inject_fault("ost-full", self._ost(target))   # on the OSS serving the OST now
                    return f.id, f.effect
                daemons.running_pid(self.twin.run, target)   # before the fault: a refused kill changes nothing
                f = lu.inject_fault("oss-kill", target)      # first: the restarted OSS finds it and stays down
            return f.id, f"killed (pid {daemons.kill(self.twin.run, target)}); {f.effect}"
        except RunDirError as e:
            raise FaultError(str(e)) from None

    def clear(self, fault: FaultPayload) -> str:
        if fault.kind == "mds-kill":
            return "nothing to undo: the supervisor restarted it"
        with self.twin.lustre() as lu:
            if fault.backend_id not in {n.backend_id for n in self._natives(lu)}:
                return "already cleared in Lustre"
            lu.clear_fault(fault.backend_id)   # the OSS serves again (failback), or the OST has its capacity back
        return "cleared"

    def _natives(self, lu: Any) -> list[Native]:
        return [Native(f["id"], f["target"], f["kind"], f["effect"]) for f in lu.faults()]

    def native(self) -> list[Native]:
        with self.twin.lustre() as lu:
            return self._natives(lu)
