"""The thrasher's checks: is each part of the twin healthy, is any fault still active, and, after
`twin down`, is anything left behind. Each check returns (passed, detail) and never raises: a part
that cannot be asked is a failed check that says why."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from emulator.client import Twin

Check = tuple[bool, Any]
ACTIVE_CLEAN = "active+clean"


def guarded(fn: Callable[[], Check]) -> Check:
    try:
        return fn()
    except Exception as e:  # noqa: BLE001 - reported as the check's failure
        return False, f"{type(e).__name__}: {str(e)[:300]}"


def wait_for(fn: Callable[[], Check], timeout: float, every: float = 1.0) -> tuple[bool, Any, float]:
    """Poll `fn` until it passes or `timeout` passes; (passed, detail, seconds waited)."""
    t0 = time.monotonic()
    while True:
        ok, detail = guarded(fn)
        if ok or time.monotonic() - t0 > timeout:
            return ok, detail, round(time.monotonic() - t0, 2)
        time.sleep(every)


# --- health -----------------------------------------------------------------------------------
def daemons(twin: Twin) -> Check:
    doc = twin.status()
    bad = {d["name"]: d["health"] for d in doc["daemons"] if d["health"] != "SERVING"}
    if not doc["supervisor"]:
        return False, "the supervisor is not running"
    return not bad, bad or f"{len(doc['daemons'])} daemons SERVING"


def daemon_serving(twin: Twin, name: str, old_pid: int = 0) -> Check:
    row = next(d for d in twin.status()["daemons"] if d["name"] == name)
    return row["health"] == "SERVING" and row["pid"] != old_pid, f"{name} pid {row['pid']} {row['health']}"


def ceph(twin: Twin) -> Check:
    r = twin.ceph(timeout=10).status()
    states = dict(r.pg_states)
    ok = r.health == "HEALTH_OK" and set(states) == {ACTIVE_CLEAN} and r.osds_up == r.osds == r.osds_in
    return ok, {"health": r.health, "osds": r.osds, "up": r.osds_up, "in": r.osds_in, "pg_states": states}


def lustre(twin: Twin) -> Check:
    """Every OST active and served by its own OSS (failback done), the MDS answering."""
    from services.lustre.client.core import LustreClient
    from services.lustre.manifest import servers

    client = LustreClient.from_manifest(twin.manifest, failover_timeout=5.0, plane="admin")
    osts = {t.index: (t.server, t.active) for t in client.statfs().osts}
    owner = {i: d.name for d in servers(twin.manifest)[1].values() for i in d.osts}
    wrong = {f"OST{i:04x}": f"{s} ({'active' if a else 'inactive'})" for i, (s, a) in osts.items()
             if not a or s != owner.get(i)}
    return not wrong, wrong or f"{len(osts)} OSTs active on their own OSS"


def fabric(twin: Twin) -> Check:
    with twin.fabric() as f:
        h = f.call("GetHealth")
    ok = h.sm_state == "MASTER" and h.ports_active == h.ports_total
    return ok, {"sm": h.sm_state, "ports_active": h.ports_active, "ports_total": h.ports_total}


def slurm(twin: Twin) -> Check:
    from services.slurm import lifecycle

    doc = lifecycle.status(twin.run)
    bad = {n: f"{s['state']} {s['reason']}".strip() for n, s in doc["nodes"].items() if s["state"] != "idle"}
    return bool(doc["nodes"]) and not bad, bad or f"{len(doc['nodes'])} nodes idle"


# --- faults left active -----------------------------------------------------------------------
def active_faults(twin: Twin) -> Check:
    found: dict[str, Any] = {}
    if twin.manifest.network_backend is not None:
        from emulator.network.remote import RemoteNetwork

        net = [f"{f.kind} {f.target}" for f in RemoteNetwork(twin.run.control_socket).faults()]
        if net:
            found["network"] = net
    gpu = [f"{n}: {f.id} GPU {f.gpu}" for n in twin.gpu_nodes for f in twin.gpu_node(n).faults()]
    if gpu:
        found["gpu"] = gpu
    if twin.daemons("ceph_mon"):
        cf = [f"{f.id} {f.kind} osd.{f.osd}" for f in twin.ceph().list_faults()]
        if cf:
            found["ceph"] = cf
    if twin.manifest.section("lustre") is not None:
        with twin.lustre() as lustre:
            lu = sorted(lustre.down_oss())
        if lu:
            found["lustre"] = [f"oss-kill {n}" for n in lu]
    if twin.daemons("fabric"):
        with twin.fabric() as f:
            down = [f"{p.node} port {p.number}" for p in f.call("GetHealth").down_ports]
        if down:
            found["fabric"] = down
    return not found, found or "none"


# --- after twin down --------------------------------------------------------------------------
def identities(pids: list[int]) -> dict[int, str]:
    """pid -> its start time (field 22 of /proc/PID/stat), for the pids alive now: a pid seen again
    later is the same process only with the same start time (pids are reused)."""
    out = {}
    for pid in pids:
        st = _start_time(pid)
        if st:
            out[pid] = st
    return out


def _start_time(pid: int) -> str:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return ""
    return "" if fields[0] == "Z" else fields[19]


def leftovers(prefix: str | None, pids: dict[int, str], mountpoints: list[str], run_path: Path
              ) -> dict[str, list[str]]:
    """What the twin started that is still there: processes (by recorded pid and start time),
    namespaces, interfaces, mounts, routes to the planes, nftables tables."""
    left: dict[str, list[str]] = {}
    alive = [str(p) for p, started in pids.items() if _start_time(p) == started]
    if alive:
        left["processes"] = alive
    if prefix:
        ns = [n for n in _lines(["ip", "netns", "list"]) if n.split()[0].startswith(prefix + "-")]
        if ns:
            left["namespaces"] = ns
        links = [ln for ln in _lines(["ip", "-o", "link", "show"]) if f" {prefix}-" in ln]
        if links:
            left["interfaces"] = links
        tables = [t for t in _lines(["nft", "list", "tables"]) if prefix in t or "clustertwin" in t]
        if tables:
            left["nftables"] = tables
        # Routes to the planes: the operator port's and the unreachable ones that keep plane traffic
        # on the machine (only one netns twin runs at a time, so any left now are this twin's).
        routes = [r for r in _lines(["ip", "-4", "route", "show"]) if f" {prefix}-" in r + " "
                  or any(r.startswith(f"10.{o}.") for o in (100, 101, 102, 103))]
        routes += [r for r in _lines(["ip", "-4", "route", "show", "type", "unreachable"])
                   if any(f"10.{o}." in r for o in (100, 101, 102, 103))]
        if routes:
            left["routes"] = sorted(set(routes))
    mounts = [ln.split()[1] for ln in Path("/proc/mounts").read_text().splitlines()
              if ln.split()[1] in mountpoints or ln.split()[1].startswith(str(run_path))]
    if mounts:
        left["mounts"] = mounts
    return left


def _lines(argv: list[str]) -> list[str]:
    try:
        return [ln for ln in subprocess.run(argv, capture_output=True, text=True, timeout=10).stdout.splitlines()
                if ln.strip()]
    except (OSError, subprocess.TimeoutExpired):
        return []
