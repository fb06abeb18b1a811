"""The monitor's model → `clustertwin.v1.CephMon` messages, and the few requests → model values."""

from __future__ import annotations

from dataclasses import asdict

from clustertwin.v1 import ceph_pb2 as pb
from services.ceph import status as ceph_status
from services.ceph.cluster import Cluster
from services.ceph.health import health
from services.ceph.mon.model import Fault, User
from services.ceph.mon.views import osd_tree_text
from services.ceph.pg import CRUSH_ITEM_NONE, PlacementGroup, state_string


def status(c: Cluster, now: float) -> pb.StatusReply:
    osds = list(c.crush.osds.values())
    counts: dict[str, int] = {}
    for s in c.pg_states().values():
        counts[state_string(s)] = counts.get(state_string(s), 0) + 1
    usage = c.usage()
    return pb.StatusReply(text=ceph_status.status_text(c, now), health=health(c).status, osds=len(osds),
                          osds_up=sum(o.up for o in osds), osds_in=sum(o.in_ for o in osds), pg_states=counts,
                          epoch=c.monitor.epoch, stored_bytes=sum(u.stored for u in usage),
                          raw_bytes=sum(u.raw for u in usage), objects=sum(u.objects for u in usage))


def osd_tree(c: Cluster, addresses: dict[int, str], used: dict[int, int]) -> pb.OsdTreeReply:
    rows = [pb.OsdInfo(id=o.id, name=o.name, host=o.host, device_class=o.device_class, weight=o.weight,
                       up=o.up, address=addresses[o.id], used_bytes=used.get(o.id, 0),
                       capacity_bytes=o.capacity_bytes, **{"in": o.in_})
            for o in sorted(c.crush.osds.values(), key=lambda o: o.id)]
    return pb.OsdTreeReply(text=osd_tree_text(c.crush), osds=rows)


def pools(c: Cluster) -> pb.PoolsReply:
    out = []
    for u in c.usage():
        p = u.pool
        out.append(pb.PoolInfo(id=p.id, name=p.name, type=p.type, size=p.size, min_size=p.min_size,
                               pg_num=p.pg_num, device_class=p.device_class or "", failure_domain=p.failure_domain,
                               codec=c.codecs[p.id].describe(), objects=u.objects,
                               stored_bytes=u.stored, raw_bytes=u.raw))
    return pb.PoolsReply(pools=out)


def pgs(c: Cluster, chosen: list[PlacementGroup]) -> pb.PgsReply:
    def ids(xs: list[int | None], live: bool) -> list[int]:
        return [CRUSH_ITEM_NONE if o is None or (live and not c.is_up(o)) else o for o in xs]

    return pb.PgsReply(pgs=[pb.PgInfo(pgid=str(pg.pgid), state=state_string(pg.state(c.is_up)),
                                      up=ids(pg.up, False), acting=ids(pg.acting, True),
                                      objects=len(pg.objects), bytes=pg.stored_bytes(),
                                      unfound=pg.unfound(c.is_up)) for pg in chosen])


def objects(c: Cluster, pool: str, prefix: str) -> list[pb.ObjectStat]:
    pid = c.pool(pool).id
    out = [pb.ObjectStat(name=n, pg=str(pgid), size=o.size)
           for pgid, pg in c.pgs.items() if pgid.pool == pid
           for n, o in pg.objects.items() if n.startswith(prefix)]
    return sorted(out, key=lambda o: o.name)


def fault(f: Fault) -> pb.CephFault:
    return pb.CephFault(**asdict(f))


def fault_in(m: pb.CephFault) -> Fault:
    return Fault(id=m.id, kind=m.kind, osd=m.osd, factor=m.factor, pool=m.pool, object=m.object, effect=m.effect)


def user(u: User) -> pb.RgwUser:
    return pb.RgwUser(**asdict(u))
