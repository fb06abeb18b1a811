"""PG states of an EC 8+3 PG, down→out→backfill→clean, recovery after return, scrub and repair."""

from __future__ import annotations

import random

import pytest

from services.ceph.errors import InsufficientChunks, PgUnavailable
from services.ceph.pg import PgState, state_string
from services.ceph.pool import PgId
from tests.unit.ceph.helpers import ec_cluster

POOL = "default.rgw.buckets.data"
DATA = random.Random(5).randbytes(4 << 20)


def _one_pg_cluster(hosts: int):  # type: ignore[no-untyped-def]
    cluster, store = ec_cluster(hosts=hosts, pg_num=1)
    cluster.put(POOL, "obj", DATA)
    return cluster, store, cluster.pgs[PgId(1, 0)]


@pytest.mark.parametrize(("down", "state", "readable"), [
    (0, "active+clean", True),
    (1, "active+undersized+degraded", True),
    (2, "active+undersized+degraded", True),
    (3, "undersized+degraded+peered", False),
    (4, "down", False),
    (5, "down", False),
])
def test_state_table_for_osds_down(down: int, state: str, readable: bool) -> None:
    cluster, _, pg = _one_pg_cluster(11)
    for i, osd in enumerate(pg.acting[:down]):
        assert osd is not None
        cluster.osd_stopped(osd, now=10.0 + i, clean=True)
    assert state_string(pg.state(cluster.is_up)) == state
    if readable:
        assert cluster.get(POOL, "obj") == DATA
        cluster.put(POOL, "obj2", b"written while degraded")  # I/O continues
    else:
        with pytest.raises(PgUnavailable, match=f"{11 - down} of 11 shards available, min_size 9"):
            cluster.get(POOL, "obj")
        with pytest.raises(PgUnavailable):
            cluster.put(POOL, "obj2", b"blocks")
    assert (pg.unfound(cluster.is_up) == ["obj"]) == (down >= 4)


def test_down_then_out_with_spare_host_backfills_to_clean() -> None:
    cluster, store, pg = _one_pg_cluster(12)
    victim = pg.acting[4]
    assert victim is not None
    spare = next(o for o in cluster.crush.osds if o not in pg.acting)
    cluster.osd_stopped(victim, now=1000.0)  # kill -9: last heartbeat at 996
    cluster.tick(1015.9)
    assert pg.state(cluster.is_up) == PgState.ACTIVE | PgState.CLEAN
    cluster.tick(1016.0)
    assert state_string(pg.state(cluster.is_up)) == "active+undersized+degraded"
    cluster.tick(1615.0)
    assert cluster.crush.osds[victim].in_
    cluster.tick(1616.0)  # 600 s down → out → CRUSH picks the spare host
    assert not cluster.crush.osds[victim].in_
    assert victim not in pg.up and spare in pg.up and pg.acting[4] is None
    moved = [p for p in range(11) if pg.up[p] != pg.acting[p]]
    assert state_string(pg.state(cluster.is_up)) == "active+undersized+degraded+remapped+backfilling"
    assert cluster.recover() == len(moved)  # one shard rebuilt or copied per moved position
    assert pg.acting == pg.up and pg.state(cluster.is_up) == PgState.ACTIVE | PgState.CLEAN
    assert store.get(spare, ("1.0", "obj", pg.up.index(spare))) is not None
    cluster.osd_stopped(pg.acting[0], now=1700.0, clean=True)  # type: ignore[arg-type]
    assert cluster.get(POOL, "obj") == DATA  # the rebuilt shard is used for decoding


def test_returning_osd_recovers_objects_written_while_it_was_down() -> None:
    cluster, _, pg = _one_pg_cluster(11)
    victim = pg.acting[2]
    assert victim is not None
    cluster.osd_stopped(victim, now=0.0, clean=True)
    cluster.put(POOL, "later", b"new data" * 1000)
    cluster.osd_started(victim, now=60.0)
    assert state_string(pg.state(cluster.is_up)) == "active+recovering+degraded"
    assert pg.degraded_copies(cluster.is_up) == 1
    assert cluster.recover() == 1
    assert pg.state(cluster.is_up) == PgState.ACTIVE | PgState.CLEAN
    for osd in pg.acting[3:6]:  # lose 3 others: the recovered shard must be a real one
        cluster.osd_stopped(osd, now=70.0, clean=True)  # type: ignore[arg-type]
    cluster.osd_started(pg.acting[3], now=71.0)  # type: ignore[arg-type]
    assert cluster.get(POOL, "later") == b"new data" * 1000


def test_shards_marked_stale_whose_chunks_landed_are_found_as_peering_would() -> None:
    """A client gave up on four chunk writes (no answer in time) that landed anyway: more than m shards
    are marked stale, yet the object is read and recovered from the chunks whose CRCs match."""
    cluster, store, pg = _one_pg_cluster(11)
    for pos in (1, 4, 6, 9):
        pg.missing.setdefault(pos, set()).add("obj")
    assert cluster.get(POOL, "obj") == DATA
    assert cluster.recover() == 4 and not pg.missing
    store.corrupt(pg.acting[0], ("1.0", "obj", 0), offset=7)   # type: ignore[arg-type]
    for pos in (0, 2, 3, 5):   # shard 0's chunk is rot, not the write: it must be rebuilt, not taken
        pg.missing.setdefault(pos, set()).add("obj")
    assert cluster.recover() == 4 and not pg.missing
    assert cluster.deep_scrub(pg.pgid) == [] and cluster.get(POOL, "obj") == DATA


def test_scrub_finds_corrupt_chunk_and_repair_fixes_it() -> None:
    cluster, store, pg = _one_pg_cluster(11)
    osd = pg.acting[7]
    assert osd is not None
    store.corrupt(osd, ("1.0", "obj", 7), offset=12345)
    assert cluster.get(POOL, "obj") == DATA  # reads skip the chunk failing its CRC
    (err,) = cluster.deep_scrub(pg.pgid)
    assert (err.object, err.shard, err.osd, err.problem) == ("obj", 7, osd, "crc mismatch")
    assert state_string(pg.state(cluster.is_up)) == "active+clean+inconsistent"
    assert cluster.repair(pg.pgid) == 1
    assert pg.state(cluster.is_up) == PgState.ACTIVE | PgState.CLEAN
    assert cluster.deep_scrub(pg.pgid) == []


def test_four_lost_shards_read_fails_clearly() -> None:
    cluster, _, pg = _one_pg_cluster(11)
    for osd in pg.acting[:4]:
        cluster.osd_stopped(osd, now=0.0, clean=True)  # type: ignore[arg-type]
    with pytest.raises(PgUnavailable, match="pg 1.0 is down"):
        cluster.get(POOL, "obj")
    assert pg.unfound(cluster.is_up) == ["obj"]
    with pytest.raises(InsufficientChunks, match="4 of 11 chunks missing"):
        cluster.codecs[1].decode({i: b"" for i in range(7)}, 0)
