"""Injecting a drill's faults into a running twin through the twin's fault API (`Twin.faults()`), as an
operator's tools do: each gets an id in the twin's fault log and its events on the bus.

Each injector returns (what happened, what the job should look at) — the latter is the runner's
`Touched`, so the job checks those servers or the fabric before its next step. A `restore` (a link,
a switch, a failed-over OSS) or an OSD's `start`/`in` clears the matching active fault. Storage faults
are placeholders unless the twin runs those daemons. A plain daemon kill (-9, the supervisor restarts
it: crash-only, as the twin's principles say) goes to the supervisor's recorded pid while that pid is
still the recorded process (emulator/process.py's start-time check).
"""

from __future__ import annotations

from typing import Any

from emulator.errors import BadInput
from emulator.sdk import daemons
from emulator.sdk.faults import FaultError
from services.lustre.manifest import servers
from workloads.drill.spec import Fault
from workloads.train.runner import Touched

STORAGE = {"oss": ("lustre_oss", "--lustre"), "mds": ("lustre_mds", "--lustre"), "osd": ("ceph_osd", "--ceph")}


def inject(twin: Any, fault: Fault, target: dict[str, Any]) -> tuple[str, Touched]:
    a = fault.args
    if fault.kind == "xid":
        f = twin.faults().inject("gpu", target["server"], "xid", gpu=target["gpu"], xid=int(a["xid"]))
        return f"{target['server']} {f.effect} ({f.id})", Touched(servers=(target["server"],))
    if fault.kind == "reboot":
        twin.gpu_node(target["server"]).reboot()
        return f"{target['server']} rebooted", Touched(servers=(target["server"],))
    if fault.kind in ("link", "switch"):
        return _fabric(twin, fault), Touched(fabric=True)
    if fault.kind == "osd" and (a.get("mode", "kill") != "kill" or "osds" in a or "osd" in a):
        return _osds(twin, fault)
    if fault.kind == "oss" and (a.get("mode") == "failover" or a.get("restore")):
        return _oss_failover(twin, fault)
    return _kill(twin, fault)


def _active(twin: Any, subsystem: str, target: str, kind: str) -> list[Any]:
    return [f for f in twin.faults().list(subsystem=subsystem) if f.target == target and f.kind == kind]


def _restore(twin: Any, subsystem: str, target: str, kind: str) -> str:
    """Clear the active faults of this kind on `target`; what was cleared."""
    cleared = [twin.faults().clear(f.id).id for f in _active(twin, subsystem, target, kind)]
    return f"{kind} {target} cleared ({', '.join(cleared)})" if cleared else f"no {kind} fault on {target} to clear"


def _fabric(twin: Any, fault: Fault) -> str:
    a = fault.args
    if fault.kind == "link":
        target, kind, params = f"{a['system']}/{int(a.get('port', 0))}", "port-down", {}
    else:
        # Server-facing ports by default: disabling the last uplink too cuts the switch off from the
        # subnet manager, whose table refresh then fails (the twin's OpenSM cannot read a dead switch);
        # for the job the loss is the same, every server loses its rails to this switch.
        target, kind, params = a["switch"], "switch-down", {"ports": a.get("ports", "servers")}
    if a.get("restore", False):
        return _restore(twin, "fabric", target, kind)
    f = twin.faults().inject("fabric", target, kind, **params)
    return f"{f.effect} ({f.id})"


def _kill(twin: Any, fault: Fault) -> tuple[str, Touched]:
    """A storage daemon killed (-9); the supervisor restarts it from its store."""
    kind, flag = STORAGE[fault.kind]
    present = twin.daemons(kind)
    if not present:
        return (f"{fault.kind.upper()} fault not available in this twin yet: it runs no {kind} daemons "
                f"(start it with `twin up {flag}`); skipped"), Touched()
    victim = fault.args.get("daemon") or present[0].name
    if fault.kind == "mds":
        f = twin.faults().inject("lustre", victim, "mds-kill")
        return f"{f.effect} ({f.id})", Touched()
    if fault.kind == "osd":
        f = twin.faults().inject("ceph", victim, "kill")
        return f"{f.effect} ({f.id})", Touched()
    pid = daemons.kill(twin.run, victim)
    return f"{victim} (pid {pid}) killed (-9); the supervisor restarts it from its store", Touched()


def _oss_failover(twin: Any, fault: Fault) -> tuple[str, Touched]:
    """An OSS that stays down (`twin fault inject lustre ossNN oss-kill`): its failover partner takes its
    OSTs over; `restore: true` clears the fault (it comes back, fails back)."""
    a = fault.args
    oss = servers(twin.manifest)[1]
    if not oss:
        return "OSS fault not available in this twin: it runs no lustre_oss daemons (`twin up --lustre`); " \
               "skipped", Touched()
    name = a.get("daemon") or sorted(oss)[0]
    if name not in oss:
        raise BadInput(f"{fault.name}: no OSS named {name!r}; this twin's are {', '.join(sorted(oss))}")
    if a.get("restore"):
        what = _restore(twin, "lustre", name, "oss-kill")
        back = _wait_served(twin, name, oss[name].osts)
        return (f"{what}: {name} takes its OSTs back from {oss[name].partner} (failback"
                f"{'' if back else ', not complete within ' + str(int(FAILBACK_WAIT_S)) + ' s wall'})"), Touched()
    f = twin.faults().inject("lustre", name, "oss-kill")
    return f"{name} {f.effect} ({f.id})", Touched()


FAILBACK_WAIT_S = 30.0


def _wait_served(twin: Any, name: str, osts: list[int]) -> bool:
    """Wait (wall, bounded) until the MDS sees `name` serving its own OSTs again, so that what the
    job and the storage model see next does not depend on how fast the daemons are."""
    import time

    deadline = time.monotonic() + FAILBACK_WAIT_S
    with twin.lustre() as lu:
        while time.monotonic() < deadline:
            try:
                served = {t.index: t.server for t in lu.statfs().osts if t.active}
                if all(served.get(i) == name for i in osts):
                    return True
            except Exception:  # noqa: BLE001, S110 - the MDS or an OSS is between owners: ask again
                pass
            time.sleep(0.1)
    return False


OSD_MODES = {"kill": "kill", "stop": "stop", "out": "out", "start": "stop", "in": "out"}   # mode -> fault kind


def _osds(twin: Any, fault: Fault) -> tuple[str, Touched]:
    """OSDs by id: kill, stop, out as faults; start and in clear the OSD's stop or out fault."""
    a = fault.args
    if not twin.daemons("ceph_osd"):
        return "OSD fault not available in this twin: it runs no ceph_osd daemons (`twin up --ceph`); skipped", \
            Touched()
    mode = a.get("mode", "kill")
    done = []
    for i in [int(i) for i in (a.get("osds") or [a.get("osd", 0)])]:
        try:
            if mode in ("start", "in"):
                done.append(_restore(twin, "ceph", f"osd.{i}", OSD_MODES[mode]))
            else:
                f = twin.faults().inject("ceph", f"osd.{i}", OSD_MODES[mode])
                done.append(f"osd.{i} {mode}: {f.effect} ({f.id})")
        except FaultError as e:   # one OSD refused: the drill reports it and goes on with the others
            done.append(f"osd.{i} {mode} failed: {e}")
    return "; ".join(done), Touched()
