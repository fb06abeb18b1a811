"""The twin's one fault API: `Twin.faults()`.

    faults = twin.faults()
    f = faults.inject("gpu", "gpu001", "xid", gpu=3, xid=79)     # a Fault: id "fault-7", effect, ...
    faults.inject("ceph", "osd.4", "out")
    faults.inject("slurm", "gpu002", "drain", reason="bad DIMM")
    faults.list()                                                # every active fault, every subsystem
    faults.clear(f.id)

Subsystems and their kinds (emulator/faults/<subsystem>.py): gpu (xid, thermal, ecc-sbe, ecc-dbe,
nvlink-down), network (link-down, loss, switch-down, node-cut, partition), fabric (port-down,
switch-down), ceph (out, stop, kill, slow, corrupt), lustre (oss-kill, ost-full, mds-kill), slurm
(drain, down). Each fault is checked in full before anything changes (FaultError if refused),
applied through the subsystem's SDK, recorded in the twin's fault log (emulator/faults/log.py) and
published on the bus (events/twin/fault, fault_clear; retained faults/twin/<id>).

Faults made another way (`twin net fault`, `twin lustre fault`, a GPU server's API, the Ceph admin
client) are adopted into the log when listed; those that ended there (a reboot, a restarted daemon)
are closed.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from emulator.errors import TwinRpcError
from emulator.events import FaultPayload
from emulator.faults import publish
from emulator.faults.backend import Backend, FaultError, Native
from emulator.faults.ceph import CephFaults
from emulator.faults.fabric import FabricFaults
from emulator.faults.gpu import GpuFaults
from emulator.faults.log import FaultLog
from emulator.faults.lustre import LustreFaults
from emulator.faults.network import NetworkFaults
from emulator.faults.slurm import SlurmFaults
from emulator.network.errors import NetworkError
from emulator.rundir import RunDirError

__all__ = ["BACKENDS", "Fault", "FaultError", "FaultsClient", "SUBSYSTEMS", "TwinFault"]

Fault = FaultPayload
BACKENDS: dict[str, type[Backend]] = {b.subsystem: b for b in (GpuFaults, NetworkFaults, FabricFaults, CephFaults,
                                                                LustreFaults, SlurmFaults)}
SUBSYSTEMS = tuple(BACKENDS)

log = logging.getLogger(__name__)
UNREACHABLE = (TwinRpcError, RunDirError, NetworkError, OSError)   # a subsystem that cannot answer now


@dataclass(frozen=True)
class TwinFault:
    """A subsystem's own record of an active fault (the per-subsystem views below)."""

    subsystem: str
    target: str
    id: str
    kind: str
    active: bool
    effect: str


class FaultsClient:
    def __init__(self, twin: Any) -> None:
        self.twin = twin
        self.clock = twin.manifest.clock.to_clock()
        self.log = FaultLog(twin.run, self.clock.now)

    def backend(self, subsystem: str) -> Backend:
        if subsystem not in BACKENDS:
            raise FaultError(f"no subsystem {subsystem!r}; the twin's: {', '.join(SUBSYSTEMS)}")
        b = BACKENDS[subsystem](self.twin)
        if why := b.present():
            raise FaultError(why)
        return b

    @contextlib.contextmanager
    def _locked(self, subsystem: str) -> Iterator[None]:
        """One change of a subsystem's faults at a time across processes and threads (inject, clear and
        the list's adoption: a fault applied but not yet logged must not be adopted as well)."""
        with open(self.twin.run.state / f"faults-{subsystem}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield

    def _publish(self, fault: Fault) -> Fault:
        try:
            publish.publish(self.twin.manifest.broker, self.twin.name, fault, self.clock.now())
        except (OSError, TimeoutError) as e:   # the log holds it; the bus is the feed
            log.warning("fault %s is logged but not published on the bus: %s", fault.id, e)
        return fault

    def inject(self, subsystem: str, target: str, kind: str, **params: Any) -> Fault:
        """Apply a fault and record it; FaultError (nothing changed) when the request is refused."""
        b = self.backend(subsystem)
        checked = b.check(target, kind, params)
        with self._locked(subsystem):
            backend_id, effect = b.inject(target, kind, checked)
            fault = self.log.add(subsystem, target, kind, checked, backend_id, effect)
        self._publish(fault)
        if kind in b.oneshot:   # over once applied: recorded, then closed
            fault = self._publish(self.log.mark_cleared(fault.id))
        return fault

    def get(self, fault_id: str) -> Fault:
        fault = self.log.get(fault_id)
        if fault is None:
            raise FaultError(f"no fault {fault_id!r} (see `twin fault list`)")
        return fault

    def resolve(self, fault_id: str, target: str | None = None) -> Fault:
        """A fault by the log's id, or by a subsystem's own id (`gpu001`'s `f-3`, `osd.4-1`, `net-2`) on
        `target`, as `twin fault clear TARGET ID` names them."""
        if self.log.get(fault_id) is not None and target is None:
            return self.get(fault_id)
        for f in self.list(include_cleared=True):
            ids = {f.id, *f.backend_id.split(","), f.backend_id.partition("/")[2]}
            if fault_id in ids and target in (None, f.target):
                return f
        raise FaultError(f"no fault {fault_id!r}" + (f" on {target}" if target else "") + " (see `twin fault list`)")

    def clear(self, fault_id: str) -> Fault:
        """Undo an active fault and mark it cleared; FaultError for an unknown or already cleared id."""
        fault = self.get(fault_id)
        if not fault.active:
            raise FaultError(f"fault {fault_id} is already cleared")
        b = self.backend(fault.subsystem)
        with self._locked(fault.subsystem):
            b.clear(fault)
            cleared = self.log.mark_cleared(fault_id)
        return self._publish(cleared)

    def list(self, include_cleared: bool = False, subsystem: str | None = None) -> list[Fault]:
        """The log's faults, oldest first (active only unless include_cleared), after adopting and
        closing what the subsystems did on their own."""
        if subsystem is not None:
            self.backend(subsystem)
        self.sync(subsystem)
        return self.log.list(include_cleared, subsystem)

    def sync(self, subsystem: str | None = None) -> None:
        """Adopt the faults the subsystems (all, or one) made on their own; close those that ended there."""
        for name, cls in BACKENDS.items():
            if subsystem not in (None, name):
                continue
            b = cls(self.twin)
            if b.present():
                continue
            with self._locked(name):   # natives read under the lock: an inject's fault is logged by then
                try:
                    natives = b.native()
                except UNREACHABLE as e:   # the log still answers; this subsystem is adopted next time
                    log.warning("%s faults not compared with the %s itself: %s", name, name, e)
                    continue
                changed = [] if natives is None else self._reconcile(b, natives)
            for fault in changed:
                self._publish(fault)

    def _reconcile(self, b: Backend, natives: list[Native]) -> list[Fault]:
        subsystem = b.subsystem
        rows = self.log.list(subsystem=subsystem)
        live = {n.backend_id for n in natives}
        logged = {i for r in rows for i in r.backend_id.split(",") if i}
        changed = [self.log.mark_cleared(r.id, f"{r.effect} (ended in the {subsystem} subsystem)")
                   for r in rows if r.backend_id and r.target not in b.unknown
                   and not live & set(r.backend_id.split(","))]
        changed += [self.log.add(subsystem, n.target, n.kind, n.params, n.backend_id, n.effect)
                    for n in natives if n.backend_id not in logged]
        return changed

    # each subsystem's own view (its record, its ids), as before the one log
    def gpu(self, include_cleared: bool = False) -> list[TwinFault]:
        from clustertwin.v1 import gpu_node_pb2

        out = []
        for name in self.twin.gpu_nodes:
            for f in self.twin.gpu_node(name).faults(include_cleared=include_cleared):
                kind = gpu_node_pb2.GpuFaultKind.Name(f.kind).removeprefix("GPU_FAULT_KIND_").lower()
                out.append(TwinFault("gpu", f"{name} GPU {f.gpu}", f.id, f"xid {f.xid}" if f.xid else kind, f.active,
                                     f.effect))
        return out

    def ceph(self, include_cleared: bool = False) -> list[TwinFault]:
        if not self.twin.daemons("ceph_mon"):
            return []
        with self.twin.ceph() as ceph:
            return [TwinFault("ceph", f"osd.{f.osd}", f.id, f.kind, f.active, f.effect)
                    for f in ceph.list_faults(include_cleared)]

    def network(self, include_cleared: bool = False) -> list[TwinFault]:
        if self.twin.manifest.network_backend is None:
            return []
        return [TwinFault("network", f.target, f.id, f.kind, f.active,
                          ", ".join(f"{k}={v}" for k, v in f.detail.items()))
                for f in self.twin.network().faults(include_cleared)]

    def lustre(self) -> list[TwinFault]:
        if self.twin.manifest.section("lustre") is None:
            return []
        with self.twin.lustre() as lu:
            return [TwinFault("lustre", f["target"], f["id"], f["kind"], True, f["effect"]) for f in lu.faults()]
