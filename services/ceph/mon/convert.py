"""The monitor's model → `clustertwin.v1.CephMon` messages, and the few requests → model values."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict

from clustertwin.v1 import ceph_pb2 as pb
from services.ceph.cluster import Cluster
from services.ceph.health import Health, health
from services.ceph.mon.model import Fault, User
from services.ceph.pg import CRUSH_ITEM_NONE, PgState, PlacementGroup, state_string


def status(c: Cluster, now: float) -> pb.CephMonStatusResponse:
    """What `ceph -s` shows, as values (services/ceph/status.py renders them)."""
    mon, is_up = c.monitor, c.is_up
    osds = list(c.crush.osds.values())
    up = [o for o in osds if o.up]
    states = c.pg_states()
    counts = Counter(state_string(s) for s in states.values())
    usage, pgs = c.usage(), c.pgs.values()
    h = health(c)
    return pb.CephMonStatusResponse(
        fsid=c.fsid, health=h.status, checks=checks(h), mons=mon.names, time=now, mon_started_at=mon.started_at,
        last_up_change=mon.last_up_change, last_in_change=mon.last_in_change, osds=len(osds), osds_up=len(up),
        osds_in=sum(o.in_ for o in osds), pools=len(usage), pgs=len(c.pgs), pg_states=counts,
        pgs_inactive=sum(1 for s in states.values() if not s & PgState.ACTIVE),
        copies=sum(len(pg.objects) * pg.pool.size for pg in pgs),
        degraded=sum(pg.degraded_copies(is_up) for pg in pgs), misplaced=sum(pg.misplaced_copies(is_up) for pg in pgs),
        unfound=sum(len(pg.unfound(is_up)) for pg in pgs), objects=sum(u.objects for u in usage),
        stored_bytes=sum(u.stored for u in usage), used_bytes=sum(c.store.used_bytes(o.id) for o in up),
        total_bytes=sum(o.capacity_bytes for o in up), raw_bytes=sum(u.raw for u in usage), epoch=mon.epoch)


def checks(h: Health) -> list[pb.CephHealthCheck]:
    return [pb.CephHealthCheck(code=x.code, severity=x.severity, summary=x.summary, detail=x.detail) for x in h.checks]


def osd_tree(c: Cluster, addresses: dict[int, str], used: dict[int, int]) -> pb.CephMonOsdTreeResponse:
    rows = [pb.CephOsdInfo(id=o.id, name=o.name, host=o.host, device_class=o.device_class, weight=o.weight,
                           up=o.up, address=addresses[o.id], used_bytes=used.get(o.id, 0),
                           capacity_bytes=o.capacity_bytes, **{"in": o.in_})
            for o in sorted(c.crush.osds.values(), key=lambda o: o.id)]
    hosts = [pb.CephCrushHost(bucket_id=h.bucket_id, name=h.name, osds=sorted(h.osds)) for h in c.crush.hosts.values()]
    return pb.CephMonOsdTreeResponse(hosts=hosts, osds=rows)


def pools(c: Cluster) -> list[pb.CephPool]:
    out = []
    for u in c.usage():
        p = u.pool
        out.append(pb.CephPool(id=p.id, name=p.name, type=p.type, size=p.size, min_size=p.min_size,
                               pg_num=p.pg_num, device_class=p.device_class or "", failure_domain=p.failure_domain,
                               codec=c.codecs[p.id].describe(), objects=u.objects,
                               stored_bytes=u.stored, raw_bytes=u.raw))
    return out


def pgs(c: Cluster, chosen: list[PlacementGroup]) -> list[pb.CephPg]:
    def ids(xs: list[int | None], live: bool) -> list[int]:
        return [CRUSH_ITEM_NONE if o is None or (live and not c.is_up(o)) else o for o in xs]

    return [pb.CephPg(pgid=str(pg.pgid), state=state_string(pg.state(c.is_up)), up=ids(pg.up, False),
                      acting=ids(pg.acting, True), objects=len(pg.objects), bytes=pg.stored_bytes(),
                      unfound=pg.unfound(c.is_up)) for pg in chosen]


def objects(c: Cluster, pool: str, prefix: str) -> list[pb.CephObjectStat]:
    pid = c.pool(pool).id
    out = [pb.CephObjectStat(name=n, pg=str(pgid), size=o.size)
           for pgid, pg in c.pgs.items() if pgid.pool == pid
           for n, o in pg.objects.items() if n.startswith(prefix)]
    return sorted(out, key=lambda o: o.name)


def fault(f: Fault) -> pb.CephFault:
    return pb.CephFault(**asdict(f))


def fault_in(m: pb.CephFault) -> Fault:
    return Fault(id=m.id, kind=m.kind, osd=m.osd, factor=m.factor, pool=m.pool, object=m.object, effect=m.effect)


def user(u: User) -> pb.CephRgwUser:
    return pb.CephRgwUser(**asdict(u))
