"""Health checks, named and worded as Ceph's monitor and manager raise them.

| check | severity | summary |
|---|---|---|
| OSD_DOWN | WARN | `N osds down` |
| OSD_HOST_DOWN | WARN | `N host (M osds) down` |
| PG_AVAILABILITY | WARN | `Reduced data availability: N pgs inactive, M pgs down, …` |
| PG_DEGRADED | WARN | `Degraded data redundancy: a/b objects degraded (p%), N pgs degraded, M pgs undersized` |
| OBJECT_UNFOUND | WARN | `a/b objects unfound (p%)` |
| OSD_SCRUB_ERRORS | ERR | `N scrub errors` |
| PG_DAMAGED | ERR | `Possible data damage: N pg inconsistent` |

Details name each OSD, host, PG (with its state and acting set) and unfound object.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from services.ceph.cluster import Cluster
from services.ceph.pg import CRUSH_ITEM_NONE, IsUp, PgState, PlacementGroup, state_string

Severity = Literal["HEALTH_OK", "HEALTH_WARN", "HEALTH_ERR"]
_RANK = {"HEALTH_OK": 0, "HEALTH_WARN": 1, "HEALTH_ERR": 2}


@dataclass(frozen=True)
class HealthCheck:
    code: str
    severity: Severity
    summary: str
    detail: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Health:
    status: Severity
    checks: list[HealthCheck]


def pct(a: int, b: int) -> str:
    return f"{100 * a / b:.3f}%" if b else "0.000%"


def acting_str(pg: PlacementGroup, is_up: IsUp) -> str:
    """Acting set as Ceph prints it: a down OSD serves nothing, so its position shows NONE."""
    ids = [CRUSH_ITEM_NONE if o is None or not is_up(o) else o for o in pg.acting]
    if not pg.pool.erasure:  # replicated sets are compact lists
        ids = [o for o in ids if o != CRUSH_ITEM_NONE]
    return "[" + ",".join(str(o) for o in ids) + "]"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def health(cluster: Cluster) -> Health:
    checks: list[HealthCheck] = []
    crush, is_up = cluster.crush, cluster.is_up
    down = [crush.osds[i] for i in sorted(crush.osds) if not crush.osds[i].up]
    if down:
        checks.append(HealthCheck("OSD_DOWN", "HEALTH_WARN", f"{len(down)} osds down",
                                  [f"{o.name} (root=default,host={o.host}) is down" for o in down]))
    hosts_down = [h for h in crush.hosts.values() if h.osds and all(not crush.osds[i].up for i in h.osds)]
    if hosts_down:
        n = sum(len(h.osds) for h in hosts_down)
        checks.append(HealthCheck(
            "OSD_HOST_DOWN", "HEALTH_WARN", f"{_plural(len(hosts_down), 'host')} ({n} osds) down",
            [f"host {h.name} (root=default) ({len(h.osds)} osds) is down" for h in hosts_down]))

    states = cluster.pg_states()
    pgs = sorted(cluster.pgs.values(), key=lambda p: p.pgid)

    def line(pg: PlacementGroup) -> str:
        return f"pg {pg.pgid} is {state_string(states[pg.pgid])}, acting {acting_str(pg, is_up)}"

    inactive = [pg for pg in pgs if not states[pg.pgid] & PgState.ACTIVE]
    if inactive:
        parts = [f"{len(inactive)} pgs inactive"]
        for flag, word in ((PgState.DOWN, "down"), (PgState.INCOMPLETE, "incomplete"), (PgState.STALE, "stale"),
                           (PgState.PEERED, "peered")):
            n = sum(1 for pg in inactive if states[pg.pgid] & flag)
            if n and flag != PgState.PEERED:
                parts.append(f"{n} pgs {word}")
        checks.append(HealthCheck("PG_AVAILABILITY", "HEALTH_WARN",
                                  "Reduced data availability: " + ", ".join(parts), [line(pg) for pg in inactive]))

    copies = sum(len(pg.objects) * pg.pool.size for pg in pgs)
    degraded = sum(pg.degraded_copies(is_up) for pg in pgs)
    dpgs = [pg for pg in pgs if states[pg.pgid] & (PgState.DEGRADED | PgState.UNDERSIZED)]
    if dpgs:
        n_deg = sum(1 for pg in dpgs if states[pg.pgid] & PgState.DEGRADED)
        n_und = sum(1 for pg in dpgs if states[pg.pgid] & PgState.UNDERSIZED)
        parts = []
        if degraded:
            parts.append(f"{degraded}/{copies} objects degraded ({pct(degraded, copies)})")
        parts.append(f"{n_deg} pgs degraded")
        if n_und:
            parts.append(f"{n_und} pgs undersized")
        checks.append(HealthCheck("PG_DEGRADED", "HEALTH_WARN", "Degraded data redundancy: " + ", ".join(parts),
                                  [line(pg) for pg in dpgs]))

    objects = sum(len(pg.objects) for pg in pgs)
    unfound = {pg.pgid: pg.unfound(is_up) for pg in pgs}
    n_unfound = sum(len(v) for v in unfound.values())
    if n_unfound:
        checks.append(HealthCheck(
            "OBJECT_UNFOUND", "HEALTH_WARN", f"{n_unfound}/{objects} objects unfound ({pct(n_unfound, objects)})",
            [f"pg {pgid} has {len(names)} unfound objects: " + ", ".join(names)
             for pgid, names in unfound.items() if names]))

    errors = sum(len(pg.inconsistent) for pg in pgs)
    if errors:
        bad = [pg for pg in pgs if pg.inconsistent]
        checks.append(HealthCheck("OSD_SCRUB_ERRORS", "HEALTH_ERR", f"{errors} scrub errors"))
        checks.append(HealthCheck(
            "PG_DAMAGED", "HEALTH_ERR", f"Possible data damage: {len(bad)} pg inconsistent",
            [line(pg) + "; " + ", ".join(f"{e.object} shard {e.shard} on osd.{e.osd}: {e.problem}"
                                         for e in pg.inconsistent) for pg in bad]))

    status: Severity = "HEALTH_OK"
    for c in checks:
        if _RANK[c.severity] > _RANK[status]:
            status = c.severity
    return Health(status, checks)
