"""`ceph -s`, `ceph health detail`, `ceph df` and `ceph osd tree` from the cluster's real state: the
monitor's values (services/ceph/mon/convert.py) as the CLI renders them (services/ceph/status.py)."""

from __future__ import annotations

import random

from clustertwin.v1 import ceph_pb2 as pb
from services.ceph import status as render
from services.ceph.cluster import Cluster
from services.ceph.health import health
from services.ceph.mon import convert
from services.ceph.status import byte_u
from tests.unit.ceph.helpers import ec_cluster

POOL = "default.rgw.buckets.data"


def status_text(cluster: Cluster, now: float) -> str:
    return render.status_text(convert.status(cluster, now))


def health_detail_text(cluster: Cluster) -> str:
    h = health(cluster)
    return render.health_detail_text(pb.CephMonHealthDetailResponse(health=h.status, checks=convert.checks(h)))


def df_text(cluster: Cluster) -> str:
    return render.df_text(pb.CephMonDfResponse(pools=convert.pools(cluster)))


def test_status_healthy_then_one_osd_down() -> None:
    cluster, store = ec_cluster(hosts=12, pg_num=16, rbd=True)
    rnd = random.Random(6)
    for i in range(10):
        cluster.put(POOL, f"tail.{i}", rnd.randbytes(4 << 20))
    cluster.put("rbd", "rbd_data.1", rnd.randbytes(1 << 20))
    text = status_text(cluster, now=7200.0)
    assert "health: HEALTH_OK" in text
    assert "osd: 24 osds: 24 up (since 2h), 24 in (since 2h)" in text
    assert "pools:   2 pools, 24 pgs" in text
    assert "objects: 11 objects, 41 MiB" in text
    assert "24 active+clean" in text
    ec = next(u for u in cluster.usage() if u.pool.name == POOL)
    assert ec.stored == 40 << 20 and ec.raw == 55 << 20 and ec.raw == 1.375 * ec.stored
    assert cluster.raw_used() == (55 << 20) + 3 * (1 << 20)
    assert "58 MiB used" in text
    assert "40 MiB" in df_text(cluster) and "55 MiB" in df_text(cluster)

    victim = 3
    hit = [pg for pg in cluster.pgs.values() if victim in pg.acting]
    cluster.osd_stopped(victim, now=7200.0, clean=True)
    text = status_text(cluster, now=7230.0)
    assert "health: HEALTH_WARN" in text and "1 osds down" in text and "1 host (1 osds) down" not in text
    assert "osd: 24 osds: 23 up (since 30s), 24 in (since 2h)" in text
    degraded = sum(len(pg.objects) for pg in hit)
    copies = 10 * 11 + 1 * 3
    assert f"Degraded data redundancy: {degraded}/{copies} objects degraded" in text
    assert f"{len(hit)} pgs degraded, {len(hit)} pgs undersized" in text
    squeezed = " ".join(text.split())
    assert f"{len(hit)} active+undersized+degraded" in squeezed
    assert f"{24 - len(hit)} active+clean" in squeezed
    detail = health_detail_text(cluster)
    assert "[WARN] OSD_DOWN: 1 osds down" in detail
    assert "osd.3 (root=default,host=host03) is down" in detail
    some = hit[0]
    assert f"pg {some.pgid} is active+undersized+degraded, acting [" in detail
    tree = render.osd_tree_text(convert.osd_tree(cluster, dict.fromkeys(cluster.crush.osds, "addr"), {}))
    assert tree.splitlines()[1].split() == ["-1", f"{sum(o.weight for o in cluster.crush.osds.values()):.5f}",
                                            "root", "default"]
    row = next(r.split() for r in tree.splitlines() if r.split()[:1] == ["3"])
    assert row[3:] == ["osd.3", "down", "1.00000", "1.00000"]


def test_four_down_gives_availability_and_unfound_and_scrub_error_is_err() -> None:
    cluster, store = ec_cluster(hosts=11, pg_num=1)
    cluster.put(POOL, "lost", b"x" * 1000)
    pg = next(iter(cluster.pgs.values()))
    for osd in pg.acting[:4]:
        cluster.osd_stopped(osd, now=0.0, clean=True)  # type: ignore[arg-type]
    h = health(cluster)
    codes = [c.code for c in h.checks]
    assert codes == ["OSD_DOWN", "OSD_HOST_DOWN", "PG_AVAILABILITY", "OBJECT_UNFOUND"], codes
    assert h.status == "HEALTH_WARN"
    detail = health_detail_text(cluster)
    assert "Reduced data availability: 1 pgs inactive, 1 pgs down" in detail
    assert "pg 1.0 has 1 unfound objects: lost" in detail
    assert "1/1 objects unfound (100.000%)" in status_text(cluster, now=60.0)
    assert "100.000% pgs not active" in status_text(cluster, now=60.0)

    cluster2, store2 = ec_cluster(hosts=11, pg_num=1)
    cluster2.put(POOL, "o", b"y" * 9000)
    pg2 = next(iter(cluster2.pgs.values()))
    store2.corrupt(pg2.acting[0], ("1.0", "o", 0))  # type: ignore[arg-type]
    cluster2.deep_scrub(pg2.pgid)
    assert health(cluster2).status == "HEALTH_ERR"
    assert "Possible data damage: 1 pg inconsistent" in status_text(cluster2, now=1.0)
    assert "1 scrub errors" in health_detail_text(cluster2)


def test_byte_units() -> None:
    assert [byte_u(0), byte_u(512 << 10), byte_u(1.5 * (1 << 30)), byte_u(196 << 40)] == [
        "0 B", "512 KiB", "1.5 GiB", "196 TiB"]
