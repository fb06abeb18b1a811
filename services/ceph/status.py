"""`ceph -s`, `ceph health detail`, `ceph df` and `ceph osd tree`, shaped like Ceph's (Reef) output so
that eyes and parsers work.

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
`ceph df`-style per-pool STORED vs USED is `df_text`. Rendered here, in the CLI, from the monitor's
structured replies (services/ceph/mon/convert.py gathers the values), as `ceph` renders the mon's.
"""

from __future__ import annotations

from clustertwin.v1 import ceph_pb2 as pb
from services.ceph.health import pct

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


def status_text(st: pb.CephMonStatusResponse) -> str:
    """`ceph -s` from the monitor's Status values (st.time: the twin time it answered at)."""
    now = st.time
    age = timespan(now - st.mon_started_at)
    lines = ["  cluster:", f"    id:     {st.fsid}", f"    health: {st.health}"]
    lines += [f"            {c.summary}" for c in st.checks]
    lines += [" ", "  services:",
              f"    mon: {len(st.mons)} daemons, quorum {','.join(st.mons)} (age {age})",
              f"    mgr: {st.mons[0]}(active, since {age})",
              f"    osd: {st.osds} osds: {st.osds_up} up (since {timespan(now - st.last_up_change)}), "
              f"{st.osds_in} in (since {timespan(now - st.last_in_change)})",
              " ", "  data:",
              f"    pools:   {st.pools} pools, {st.pgs} pgs",
              f"    objects: {st.objects} objects, {byte_u(st.stored_bytes)}",
              f"    usage:   {byte_u(st.used_bytes)} used, {byte_u(st.total_bytes - st.used_bytes)} / "
              f"{byte_u(st.total_bytes)} avail"]
    pre = []
    if st.pgs_inactive:
        pre.append(f"{pct(st.pgs_inactive, st.pgs)} pgs not active")
    for label, n in (("degraded", st.degraded), ("misplaced", st.misplaced)):
        if n:
            pre.append(f"{n}/{st.copies} objects {label} ({pct(n, st.copies)})")
    if st.unfound:
        pre.append(f"{st.unfound}/{st.objects} objects unfound ({pct(st.unfound, st.objects)})")
    counts = dict(st.pg_states)
    width = max((len(str(n)) for n in counts.values()), default=1)
    rows = pre + [f"{n:<{width}} {name}" for name, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    for i, row in enumerate(rows):
        lines.append(("    pgs:     " if i == 0 else "             ") + row)
    return "\n".join(lines) + "\n"


def health_detail_text(h: pb.CephMonHealthDetailResponse) -> str:
    if not h.checks:
        return "HEALTH_OK\n"
    out = [f"{h.health}: " + "; ".join(c.summary for c in h.checks)]
    for c in h.checks:
        out.append(f"[{c.severity.removeprefix('HEALTH_')}] {c.code}: {c.summary}")
        out += [f"    {d}" for d in c.detail]
    return "\n".join(out) + "\n"


def df_text(df: pb.CephMonDfResponse) -> str:
    """`ceph df`'s POOLS table: STORED is what clients wrote, USED the raw chunk bytes."""
    rows = ["--- POOLS ---", f"{'POOL':<24}{'ID':>4}{'PGS':>6}{'STORED':>12}{'OBJECTS':>9}{'USED':>12}"]
    for p in df.pools:
        rows.append(f"{p.name:<24}{p.id:>4}{p.pg_num:>6}{byte_u(p.stored_bytes):>12}"
                    f"{p.objects:>9}{byte_u(p.raw_bytes):>12}")
    return "\n".join(rows) + "\n"


def osd_tree_text(tree: pb.CephMonOsdTreeResponse) -> str:
    """`ceph osd tree`, shaped like Ceph's (Reef) output."""
    osds = {o.id: o for o in tree.osds}
    rows = [f"{'ID':>4}  {'CLASS':<5}  {'WEIGHT':>9}  {'TYPE NAME':<18}  {'STATUS':>6}  {'REWEIGHT':>8}  PRI-AFF"]
    rows.append(f"{-1:>4}  {'':<5}  {sum(o.weight for o in tree.osds):>9.5f}  {'root default':<18}")
    for host in tree.hosts:
        weight = sum(osds[i].weight for i in host.osds)
        rows.append(f"{host.bucket_id:>4}  {'':<5}  {weight:>9.5f}  {'    host ' + host.name:<18}")
        for o in (osds[i] for i in sorted(host.osds)):
            rows.append(f"{o.id:>4}  {o.device_class:<5}  {o.weight:>9.5f}  {'        ' + o.name:<18}  "
                        f"{'up' if o.up else 'down':>6}  {1.0 if getattr(o, 'in') else 0.0:>8.5f}  1.00000")
    return "\n".join(rows) + "\n"
