"""The seeded fault plan: which fault, on what, when it is injected and when it is cleared. Pure.

The same seed and inventory give the same plan, byte for byte (`digest`); the workload's
interleaving with it is not replayed (threads, processes and the kernel decide that). Every fault
is cleared before `clear_by` (three quarters of the run), so the last quarter is for recovery under
load. Faults share *domains* with a capacity, so the plan never asks for what the system is not
built to survive: at most two OSDs down at once (EC 8+3 with min_size 9 stays active), one OSS of
the failover pair, one fault per GPU server, one fabric fault, one Ethernet fault.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import asdict, dataclass, field
from typing import Any

# kind -> (weight, shortest hold s, longest hold s). A kill is not cleared by the plan: the
# supervisor restarts the daemon; its hold keeps the domain busy while it does.
KINDS: dict[str, tuple[int, float, float]] = {
    "kill": (5, 4.0, 8.0),
    "osd-stop": (3, 8.0, 20.0),
    "oss-kill": (2, 10.0, 20.0),
    "xid": (3, 5.0, 12.0),
    "link-down": (3, 5.0, 15.0),
    "cut": (2, 5.0, 12.0),
}
CAPACITY = {"osd": 2}   # every other domain: 1
XIDS = (79, 48)         # 79: off the bus until the node reboots; 48: double-bit error, a GPU reset
MIN_GAP_S, MAX_GAP_S = 3.0, 8.0
WHOLE_LINK = 1 / 3      # share of compute link faults that take every cable of the link down


@dataclass(frozen=True)
class Inventory:
    """What can be faulted, from the topology and the manifest (sorted, so plans are stable)."""

    daemons: dict[str, str]                   # name -> kind (gpu_node, ceph_osd, lustre_oss, ...)
    osds: list[int] = field(default_factory=list)
    oss: list[str] = field(default_factory=list)
    xid_servers: list[str] = field(default_factory=list)   # GPU servers not in MIG mode
    links: list[tuple[str, str, int, str]] = field(default_factory=list)   # (a, b, cables, fabric)
    cut_hosts: dict[str, str] = field(default_factory=dict)   # host -> domain it takes down
    host_daemons: dict[str, list[str]] = field(default_factory=dict)   # host -> the daemons on it


@dataclass(frozen=True)
class PlannedFault:
    id: str
    at: float
    clear_at: float
    kind: str
    target: dict[str, Any]
    domain: str

    @property
    def label(self) -> str:
        t = self.target
        if self.kind == "link-down":
            return f"{t['a']}-{t['b']}#{'all' if t['index'] is None else t['index']}"
        if self.kind == "xid":
            return f"{t['server']} GPU {t['gpu']} Xid {t['xid']}"
        return str(t.get("name") or t.get("osd") or t.get("host"))


def _domain_of_daemon(name: str, kind: str) -> str:
    return {"gpu_node": f"gpu:{name}", "ceph_osd": "osd", "lustre_oss": "lustre", "lustre_mds": "mds",
            "ceph_mon": "ceph-mon", "ceph_rgw": "rgw", "fabric": "fabric"}.get(kind, kind)


def _candidates(kind: str, inv: Inventory, rng: random.Random) -> tuple[dict[str, Any], str] | None:
    if kind == "kill" and inv.daemons:
        name = rng.choice(sorted(inv.daemons))
        return {"name": name, "daemon_kind": inv.daemons[name]}, _domain_of_daemon(name, inv.daemons[name])
    if kind == "osd-stop" and inv.osds:
        return {"osd": rng.choice(inv.osds)}, "osd"
    if kind == "oss-kill" and inv.oss:
        return {"name": rng.choice(inv.oss)}, "lustre"
    if kind == "xid" and inv.xid_servers:
        server = rng.choice(inv.xid_servers)
        return {"server": server, "gpu": rng.randrange(8), "xid": rng.choice(XIDS)}, f"gpu:{server}"
    if kind == "link-down" and inv.links:
        a, b, cables, fabric = rng.choice(inv.links)
        # A whole leaf-spine link (every parallel cable) only on the compute fat tree, which has
        # another spine; the Ethernet segments have one spine, so there it is one cable of many.
        index = None if fabric == "compute" and rng.random() < WHOLE_LINK else rng.randrange(cables)
        return {"a": a, "b": b, "index": index, "fabric": fabric}, "fabric" if fabric == "compute" else "ethernet"
    if kind == "cut" and inv.cut_hosts:
        host = rng.choice(sorted(inv.cut_hosts))
        return {"host": host, "daemons": sorted(inv.host_daemons.get(host, []))}, inv.cut_hosts[host]
    return None


def plan(seed: int, duration_s: float, inv: Inventory) -> list[PlannedFault]:
    """Faults from 5 % of the run until `clear_by(duration_s)`, each cleared by then."""
    rng = random.Random(seed)
    start, end = max(3.0, 0.05 * duration_s), clear_by(duration_s)
    kinds = [k for k in KINDS if _candidates(k, inv, random.Random(0)) is not None]
    busy: list[tuple[float, float, str]] = []   # (from, to, domain)
    out: list[PlannedFault] = []
    t = start
    while kinds and t < end:
        for _ in range(8):   # a few tries for a fault whose domain has room
            kind = rng.choices(kinds, weights=[KINDS[k][0] for k in kinds])[0]
            target, domain = _candidates(kind, inv, rng)  # type: ignore[misc]
            hold = rng.uniform(KINDS[kind][1], KINDS[kind][2])
            until = min(t + hold, end)
            if until - t < KINDS[kind][1] / 2:
                continue
            overlapping = sum(1 for a, b, d in busy if d == domain and a < until and t < b)
            if overlapping < CAPACITY.get(domain, 1) and not _shares_resource(out, kind, target, t):
                busy.append((t, until, domain))
                out.append(PlannedFault(f"f{len(out) + 1:03d}", round(t, 3), round(until, 3), kind, target, domain))
                break
        t += rng.uniform(MIN_GAP_S, MAX_GAP_S)
    return out


def resources(kind: str, target: dict[str, Any]) -> set[str]:
    """What a fault holds while active: a host, a daemon, an OSD, a link."""
    if kind == "osd-stop":
        return {f"osd.{target['osd']}"}
    if kind == "xid":
        return {target["server"]}
    if kind == "link-down":
        return {f"{target['a']}-{target['b']}"}
    if kind == "cut":
        return {target["host"], *target.get("daemons", [])}
    return {target["name"]}


def _shares_resource(out: list[PlannedFault], kind: str, target: dict[str, Any], t: float) -> bool:
    """Two active faults never hold the same thing: an OSD is not stopped twice, nor stopped on a host
    that is cut off (its start could not reach it), nor killed while either."""
    mine = resources(kind, target)
    return any(f.clear_at > t and resources(f.kind, f.target) & mine for f in out)


def inventory_from_json(doc: dict[str, Any]) -> Inventory:
    """An inventory read back from a report (JSON made its tuples lists)."""
    return Inventory(**{**doc, "links": [tuple(x) for x in doc.get("links", [])]})


def clear_by(duration_s: float) -> float:
    return 0.75 * duration_s


def events(faults: list[PlannedFault]) -> list[tuple[float, str, PlannedFault]]:
    """(time, "inject" | "clear", fault), in time order; at equal times clears come first."""
    evs = [(f.at, "inject", f) for f in faults] + [(f.clear_at, "clear", f) for f in faults]
    return sorted(evs, key=lambda e: (e[0], e[1] != "clear", e[2].id))


def as_json(faults: list[PlannedFault]) -> list[dict[str, Any]]:
    return [asdict(f) for f in faults]


def digest(faults: list[PlannedFault]) -> str:
    return hashlib.sha256(json.dumps(as_json(faults), sort_keys=True).encode()).hexdigest()[:16]
