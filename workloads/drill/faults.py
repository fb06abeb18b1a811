"""Injecting a drill's faults into a running twin, through the same APIs an operator uses.

Each injector returns (what happened, what the job should look at) — the latter is the runner's
`Touched`, so the job checks those servers or the fabric before its next step. Storage faults
(OSS, MDS, OSD) are placeholders unless the twin runs those daemons: then the daemon is killed
(-9), a crash the supervisor restarts it from (crash-only, as the twin's principles say).
"""

from __future__ import annotations

import json
import os
import signal
from typing import Any

from workloads.drill.spec import Fault
from workloads.train.runner import Touched

STORAGE = {"oss": ("lustre_oss", "--lustre"), "mds": ("lustre_mds", "--lustre"), "osd": ("ceph_osd", "--ceph")}


def inject(twin: Any, fault: Fault, target: dict[str, Any]) -> tuple[str, Touched]:
    a = fault.args
    if fault.kind == "xid":
        f = twin.gpu_node(target["server"]).inject_xid(gpu=target["gpu"], xid=int(a["xid"]))
        return f"{target['server']} GPU {target['gpu']}: {f.effect}", Touched(servers=(target["server"],))
    if fault.kind == "reboot":
        twin.gpu_node(target["server"]).reboot()
        return f"{target['server']} rebooted", Touched(servers=(target["server"],))
    if fault.kind == "link":
        enabled = bool(a.get("restore", False))
        r = twin.fabric().call("SetPortState", system=a["system"], port=int(a.get("port", 0)), enabled=enabled)
        return f"{a['system']} port {a.get('port', '')} {'enabled' if enabled else 'disabled'} " \
               f"(resweep {r.resweep_seconds:.2f} s)", Touched(fabric=True)
    if fault.kind == "switch":
        enabled = bool(a.get("restore", False))
        fabric = twin.fabric()
        ports = fabric.call("ListPorts", system=a["switch"]).ports
        if not ports:
            raise ValueError(f"{fault.name}: the fabric has no switch {a['switch']!r} with cabled ports")
        # Server-facing ports by default: disabling the last uplink too cuts the switch off from the
        # subnet manager, whose table refresh then fails (the twin's OpenSM cannot read a dead switch);
        # for the job the loss is the same, every server loses its rails to this switch.
        scope = a.get("ports", "servers")
        mine = [p for p in ports if p.system == a["switch"]
                and (scope == "all" or p.peer_node.split(" ", 1)[0] in twin.gpu_nodes)]
        changed = sum(fabric.call("SetPortState", system=a["switch"], port=p.number, enabled=enabled).changed
                      for p in mine)
        verb = "restored" if enabled else "lost"
        return f"switch {a['switch']} {verb}: {changed} server-facing ports " \
               f"{'enabled' if enabled else 'disabled'}", Touched(fabric=True)
    if fault.kind == "osd" and (a.get("mode", "kill") != "kill" or "osds" in a or "osd" in a):
        return _osds(twin, fault)
    if fault.kind == "oss" and (a.get("mode") == "failover" or a.get("restore")):
        return _oss_failover(twin, fault)
    kind, flag = STORAGE[fault.kind]
    present = [d for d in twin.daemons(kind)]
    if not present:
        return (f"{fault.kind.upper()} fault not available in this twin yet: it runs no {kind} daemons "
                f"(start it with `twin up {flag}`); skipped"), Touched()
    victim = a.get("daemon") or present[0]["name"]
    pids = json.loads(twin.run.daemons.read_text())["daemons"]
    pid = pids.get(victim, {}).get("pid")
    if not pid:
        return f"{fault.kind.upper()} {victim}: no pid in the supervisor's view; skipped", Touched()
    os.kill(int(pid), signal.SIGKILL)
    return f"{victim} killed (-9); the supervisor restarts it from its store", Touched()


def _oss_failover(twin: Any, fault: Fault) -> tuple[str, Touched]:
    """An OSS that stays down (the fault marker `twin lustre fault oss-kill` writes, then -9): its
    failover partner takes its OSTs over; `restore: true` removes the marker (it comes back, fails back)."""
    from services.lustre.oss.daemon import fault_marker

    a = fault.args
    oss = {d["name"]: d for d in twin.daemons("lustre_oss")}
    if not oss:
        return "OSS fault not available in this twin: it runs no lustre_oss daemons (`twin up --lustre`); " \
               "skipped", Touched()
    name = a.get("daemon") or sorted(oss)[0]
    if name not in oss:
        raise ValueError(f"{fault.name}: no OSS named {name!r}; this twin's are {', '.join(sorted(oss))}")
    marker = fault_marker(twin.manifest["lustre"]["data_dir"], name)
    osts = ", ".join(f"OST{i:04x}" for i in oss[name].get("osts", []))
    if a.get("restore"):
        marker.unlink(missing_ok=True)
        back = _wait_served(twin, name, oss[name].get("osts", []))
        return (f"{name} started again: it takes {osts} back from {oss[name].get('partner')} (failback"
                f"{'' if back else ', not complete within ' + str(int(FAILBACK_WAIT_S)) + ' s wall'})"), Touched()
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text("oss-kill\n")
    pid = json.loads(twin.run.daemons.read_text())["daemons"].get(name, {}).get("pid")
    if pid:
        try:
            os.kill(int(pid), signal.SIGKILL)
        except ProcessLookupError:
            pass
    partner = oss[name].get("partner")
    then = f"{partner} takes over {osts}" if partner else f"no partner: I/O to {osts} blocks, then fails with EIO"
    return f"{name} killed (-9) and kept down; {then}", Touched()


FAILBACK_WAIT_S = 30.0


def _wait_served(twin: Any, name: str, osts: list[int]) -> bool:
    """Wait (wall, bounded) until the MDS sees `name` serving its own OSTs again, so that what the
    job and the storage model see next does not depend on how fast the daemons are."""
    import time

    from services.lustre.client.core import LustreClient

    client = LustreClient.from_manifest(twin.manifest, failover_timeout=5.0)
    deadline = time.monotonic() + FAILBACK_WAIT_S
    while time.monotonic() < deadline:
        try:
            served = {t.index: t.server for t in client.statfs().osts if t.active}
            if all(served.get(i) == name for i in osts):
                return True
        except Exception:  # noqa: BLE001, S110 - the MDS or an OSS is between owners: ask again
            pass
        time.sleep(0.1)
    return False


def _osds(twin: Any, fault: Fault) -> tuple[str, Touched]:
    """OSDs by id through `twin ceph osd kill|stop` (a stopped OSD stays down until started)."""
    import subprocess
    import sys
    from pathlib import Path

    a = fault.args
    if not twin.daemons("ceph_osd"):
        return "OSD fault not available in this twin: it runs no ceph_osd daemons (`twin up --ceph`); skipped", \
            Touched()
    ids = [int(i) for i in (a.get("osds") or [a.get("osd", 0)])]
    verb = a.get("mode", "kill")  # kill, stop, start, out, in: `twin ceph osd VERB ID`
    exe = Path(sys.executable).with_name("twin")
    done = []
    for i in ids:
        r = subprocess.run([str(exe) if exe.exists() else "twin", "ceph", "osd", verb, str(i), "--run-dir",
                            str(twin.run.path)], capture_output=True, text=True, timeout=30)
        done.append(f"osd.{i} {verb}" + ("" if r.returncode == 0 else f" failed: {r.stderr.strip()[:200]}"))
    return "; ".join(done), Touched()
