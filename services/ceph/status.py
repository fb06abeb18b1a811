"""`ceph -s` and `ceph health detail`, shaped like Ceph's (Reef) output so that eyes and parsers work.

    cluster:
      id:     <fsid>
      health: HEALTH_WARN
              1 osds down
              Degraded data redundancy: 96/1320 objects degraded (7.273%), 12 pgs degraded, 12 pgs undersized
    <space>
    services:
      mon: 1 daemons, quorum a (age 2h)
      mgr: a(active, since 2h)
      osd: 12 osds: 11 up (since 30s), 12 in (since 2h)
    <space>
    data:
      pools:   2 pools, 160 pgs
      objects: 120 objects, 480 MiB
      usage:   660 MiB used, 196 TiB / 196 TiB avail
      pgs:     96/1320 objects degraded (7.273%)
               148 active+clean
               12  active+undersized+degraded

Usage is raw (chunk bytes on the up OSDs; an EC 8+3 pool uses 1.375 × what it stores);
`ceph df`-style per-pool STORED vs USED is `df_text`.
"""

from __future__ import annotations

from collections import Counter

from services.ceph.cluster import Cluster
from services.ceph.health import health, pct
from services.ceph.pg import PgState, state_string

_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")


def byte_u(n: float) -> str:
    """Bytes as Ceph prints them: '0 B', '512 KiB', '1.4 GiB', '196 TiB'."""
    i = 0
    while n >= 1024 and i < len(_UNITS) - 1:
        n /= 1024
        i += 1
    if n == int(n) or n >= 10:
        return f"{round(n):d} {_UNITS[i]}"
    return f"{n:.1f} {_UNITS[i]}"


def timespan(seconds: float) -> str:
    s = max(int(seconds), 0)
    for unit, size in (("w", 604800 * 2), ("d", 86400 * 2), ("h", 3600 * 2), ("m", 60 * 2)):
        if s >= size:
            return f"{s // (size // 2)}{unit}"
    return f"{s}s"


def status_text(cluster: Cluster, now: float) -> str:
    h = health(cluster)
    mon, crush, is_up = cluster.monitor, cluster.crush, cluster.is_up
    osds = list(crush.osds.values())
    up = [o for o in osds if o.up]
    n_in = sum(1 for o in osds if o.in_)
    age = timespan(now - mon.started_at)
    lines = ["  cluster:", f"    id:     {cluster.fsid}", f"    health: {h.status}"]
    lines += [f"            {c.summary}" for c in h.checks]
    lines += [" ", "  services:",
              f"    mon: {len(mon.names)} daemons, quorum {','.join(mon.names)} (age {age})",
              f"    mgr: {mon.names[0]}(active, since {age})",
              f"    osd: {len(osds)} osds: {len(up)} up (since {timespan(now - mon.last_up_change)}), "
              f"{n_in} in (since {timespan(now - mon.last_in_change)})",
              " ", "  data:"]
    usage = cluster.usage()
    pgs = cluster.pgs.values()
    objects = sum(u.objects for u in usage)
    stored = sum(u.stored for u in usage)
    total = sum(o.capacity_bytes for o in up)
    used = sum(cluster.store.used_bytes(o.id) for o in up)
    lines += [f"    pools:   {len(usage)} pools, {len(cluster.pgs)} pgs",
              f"    objects: {objects} objects, {byte_u(stored)}",
              f"    usage:   {byte_u(used)} used, {byte_u(total - used)} / {byte_u(total)} avail"]
    states = cluster.pg_states()
    pre = []
    inactive = sum(1 for s in states.values() if not s & PgState.ACTIVE)
    if inactive:
        pre.append(f"{pct(inactive, len(states))} pgs not active")
    copies = sum(len(pg.objects) * pg.pool.size for pg in pgs)
    for label, n in (("degraded", sum(pg.degraded_copies(is_up) for pg in pgs)),
                     ("misplaced", sum(pg.misplaced_copies(is_up) for pg in pgs))):
        if n:
            pre.append(f"{n}/{copies} objects {label} ({pct(n, copies)})")
    unfound = sum(len(pg.unfound(is_up)) for pg in pgs)
    if unfound:
        pre.append(f"{unfound}/{objects} objects unfound ({pct(unfound, objects)})")
    counts = Counter(state_string(s) for s in states.values())
    width = max((len(str(n)) for n in counts.values()), default=1)
    rows = pre + [f"{n:<{width}} {name}" for name, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    for i, row in enumerate(rows):
        lines.append(("    pgs:     " if i == 0 else "             ") + row)
    return "\n".join(lines) + "\n"


def health_detail_text(cluster: Cluster) -> str:
    h = health(cluster)
    if not h.checks:
        return "HEALTH_OK\n"
    out = [f"{h.status}: " + "; ".join(c.summary for c in h.checks)]
    for c in h.checks:
        out.append(f"[{c.severity.removeprefix('HEALTH_')}] {c.code}: {c.summary}")
        out += [f"    {d}" for d in c.detail]
    return "\n".join(out) + "\n"


def df_text(cluster: Cluster) -> str:
    """`ceph df`'s POOLS table: STORED is what clients wrote, USED the raw chunk bytes."""
    rows = ["--- POOLS ---", f"{'POOL':<24}{'ID':>4}{'PGS':>6}{'STORED':>12}{'OBJECTS':>9}{'USED':>12}"]
    for u in cluster.usage():
        rows.append(f"{u.pool.name:<24}{u.pool.id:>4}{u.pool.pg_num:>6}{byte_u(u.stored):>12}"
                    f"{u.objects:>9}{byte_u(u.raw):>12}")
    return "\n".join(rows) + "\n"
