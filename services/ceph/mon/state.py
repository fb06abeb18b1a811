"""What the monitor persists so that a kill -9 loses nothing it acknowledged: the OSD map (up/in,
weights, epoch), every PG's peering state (acting, holders, backfill targets, stale shards), every
object's metadata (size and per-shard CRCs: what reads, scrub and recovery check chunks against)
and the RGW users. One SQLAlchemy engine (SQLite in the run directory by default); an object's row
and its PG's row are committed before the write is acknowledged.
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import text

from emulator.store import make_engine
from services.ceph.cluster import Cluster
from services.ceph.pg import ObjectInfo, PlacementGroup
from services.ceph.pool import PgId

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS ceph_mon_kv (k VARCHAR(512) PRIMARY KEY, v TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS ceph_mon_objects (pg VARCHAR(32) NOT NULL, name TEXT NOT NULL, "
    "size BIGINT NOT NULL, crcs TEXT NOT NULL, PRIMARY KEY (pg, name))",
)

_UPSERT_KV = text("INSERT INTO ceph_mon_kv (k, v) VALUES (:k, :v) ON CONFLICT (k) DO UPDATE SET v = excluded.v")
_UPSERT_OBJECT = text("INSERT INTO ceph_mon_objects (pg, name, size, crcs) VALUES (:pg, :n, :s, :c) "
                      "ON CONFLICT (pg, name) DO UPDATE SET size = excluded.size, crcs = excluded.crcs")


def pg_doc(pg: PlacementGroup) -> dict[str, Any]:
    return {"acting": pg.acting, "up": pg.up, "holders": pg.holders,
            "targets": {str(p): o for p, o in pg.targets.items()},
            "missing": {str(p): sorted(s) for p, s in pg.missing.items() if s},
            "backfilled": {str(p): sorted(s) for p, s in pg.backfilled.items()}}


def apply_pg_doc(pg: PlacementGroup, doc: dict[str, Any]) -> None:
    pg.acting, pg.up, pg.holders = list(doc["acting"]), list(doc["up"]), list(doc["holders"])
    pg.targets = {int(p): o for p, o in doc["targets"].items()}
    pg.missing = {int(p): set(s) for p, s in doc["missing"].items()}
    pg.backfilled = {int(p): set(s) for p, s in doc["backfilled"].items()}


class MonState:
    def __init__(self, url: str) -> None:
        self.engine = make_engine(url)
        with self.engine.begin() as c:
            for ddl in _SCHEMA:
                c.execute(text(ddl))

    def _put_kv(self, c: Any, key: str, value: Any) -> None:
        # One upsert (SQLite >= 3.24 and PostgreSQL alike) instead of a delete and an insert: the
        # monitor commits a PG row per object write, so statements here are on the hot path.
        c.execute(_UPSERT_KV, {"k": key, "v": json.dumps(value)})

    def save_object(self, pg: PlacementGroup, name: str) -> None:
        """After a write or remove of `name`: its row (or its absence) and its PG's row, in one commit."""
        with self.engine.begin() as c:
            info = pg.objects.get(name)
            if info is None:
                c.execute(text("DELETE FROM ceph_mon_objects WHERE pg = :pg AND name = :n"),
                          {"pg": str(pg.pgid), "n": name})
            else:
                c.execute(_UPSERT_OBJECT, {"pg": str(pg.pgid), "n": name, "s": info.size,
                                           "c": json.dumps(list(info.crcs))})
            self._put_kv(c, f"pg:{pg.pgid}", pg_doc(pg))

    def save_map(self, cluster: Cluster) -> None:
        """After an OSD-map change or recovery: the map and every PG's peering state."""
        mon = cluster.monitor
        osds = {str(o.id): {"up": o.up, "in": o.in_, "weight": o.weight,
                            "auto_out": mon._life[o.id].auto_out if o.id in mon._life else False,
                            "down_at": mon._life[o.id].down_at if o.id in mon._life else None}
                for o in cluster.crush.osds.values()}
        with self.engine.begin() as c:
            self._put_kv(c, "osdmap", {"epoch": mon.epoch, "flags": sorted(mon.flags), "osds": osds,
                                       "last_up_change": mon.last_up_change, "last_in_change": mon.last_in_change})
            for pg in cluster.pgs.values():
                self._put_kv(c, f"pg:{pg.pgid}", pg_doc(pg))

    def save_user(self, user: dict[str, str]) -> None:
        with self.engine.begin() as c:
            self._put_kv(c, f"user:{user['access_key']}", user)

    def users(self) -> list[dict[str, str]]:
        with self.engine.connect() as c:
            rows = c.execute(text("SELECT v FROM ceph_mon_kv WHERE k LIKE 'user:%' ORDER BY k")).all()
        return [json.loads(r[0]) for r in rows]

    def load(self, cluster: Cluster) -> bool:
        """Put the saved state into a freshly built `cluster`; False if there was none."""
        with self.engine.connect() as c:
            rows = c.execute(text("SELECT k, v FROM ceph_mon_kv WHERE k NOT LIKE 'user:%'")).all()
            kv = {k: json.loads(v) for k, v in rows}
            objects = c.execute(text("SELECT pg, name, size, crcs FROM ceph_mon_objects")).all()
        osdmap = kv.get("osdmap")
        if osdmap is None:
            return False
        mon = cluster.monitor
        for sid, o in osdmap["osds"].items():
            osd = cluster.crush.osds.get(int(sid))
            if osd is None:
                continue
            osd.up, osd.in_, osd.weight = o["up"], o["in"], o["weight"]
            life = mon._life.get(osd.id)
            if life is not None:
                life.auto_out, life.down_at = o["auto_out"], o["down_at"]
        mon.epoch, mon.flags = osdmap["epoch"], set(osdmap["flags"])
        mon.last_up_change, mon.last_in_change = osdmap["last_up_change"], osdmap["last_in_change"]
        for key, doc in kv.items():
            if key.startswith("pg:"):
                pg = cluster.pgs.get(PgId.parse(key[3:]))
                if pg is not None:
                    apply_pg_doc(pg, doc)
        for pgid, name, size, crcs in objects:
            pg = cluster.pgs.get(PgId.parse(pgid))
            if pg is not None:
                pg.objects[name] = ObjectInfo(name, int(size), tuple(json.loads(crcs)))
        cluster._peered_epoch = mon.epoch
        return True


def save_doc(state: MonState, key: str, doc: dict[str, Any]) -> None:
    """A small JSON document under `key` (faults: `fault:<id>`), committed before it is acknowledged."""
    with state.engine.begin() as c:
        state._put_kv(c, key, doc)


def load_docs(state: MonState, prefix: str) -> list[dict[str, Any]]:
    with state.engine.connect() as c:
        rows = c.execute(text("SELECT v FROM ceph_mon_kv WHERE k LIKE :p ORDER BY k"), {"p": prefix + "%"}).all()
    return [json.loads(r[0]) for r in rows]
