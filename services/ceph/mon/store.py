"""What the monitor persists so that a kill -9 loses nothing it acknowledged, in tables a person can
query (`sqlite3 state/ceph-mon.db 'select * from ceph_mon_osds'`):

- ceph_mon_osdmap   the map's epoch, flags and last up/in change (one row)
- ceph_mon_osds     each OSD's up/in, weight, and whether it was marked out automatically
- ceph_mon_pgs      each PG's peering state (acting, up, holders, backfill targets, stale shards)
- ceph_mon_objects  each object's size and per-shard CRCs (what reads, scrub and recovery check)
- ceph_mon_users    the RGW users
- ceph_mon_faults   the OSD fault log

An object's row and its PG's row are committed before the write is acknowledged. Writes go through
Core statements built once (an ORM Session per write cost ten times the SQL).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from sqlalchemy import JSON, BigInteger, Boolean, Connection, Float, Integer, String, Text, bindparam, delete, select
from sqlalchemy.orm import Mapped, Session, mapped_column

from emulator.store import Base, Writer, create_tables, make_engine, upserts
from services.ceph.cluster import Cluster
from services.ceph.mon.model import Fault, User
from services.ceph.pg import ObjectInfo, PlacementGroup
from services.ceph.pool import PgId


class OsdMapRow(Base):
    __tablename__ = "ceph_mon_osdmap"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)   # always 1: the cluster has one map
    epoch: Mapped[int] = mapped_column(Integer)
    flags: Mapped[list[str]] = mapped_column(JSON)
    last_up_change: Mapped[float] = mapped_column(Float)
    last_in_change: Mapped[float] = mapped_column(Float)


class OsdRow(Base):
    __tablename__ = "ceph_mon_osds"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    up: Mapped[bool] = mapped_column(Boolean)
    in_: Mapped[bool] = mapped_column("in", Boolean)
    weight: Mapped[float] = mapped_column(Float)
    auto_out: Mapped[bool] = mapped_column(Boolean)
    down_at: Mapped[float | None] = mapped_column(Float, nullable=True)


class PgRow(Base):
    __tablename__ = "ceph_mon_pgs"
    pgid: Mapped[str] = mapped_column(String(32), primary_key=True)
    acting: Mapped[list[int | None]] = mapped_column(JSON)
    up: Mapped[list[int | None]] = mapped_column(JSON)
    holders: Mapped[list[Any]] = mapped_column(JSON)
    targets: Mapped[dict[str, int]] = mapped_column(JSON)     # shard -> OSD backfilling it
    missing: Mapped[dict[str, list[str]]] = mapped_column(JSON)   # shard -> objects stale there
    backfilled: Mapped[dict[str, list[str]]] = mapped_column(JSON)


class ObjectRow(Base):
    __tablename__ = "ceph_mon_objects"
    pg: Mapped[str] = mapped_column(String(32), primary_key=True)
    name: Mapped[str] = mapped_column(Text, primary_key=True)
    size: Mapped[int] = mapped_column(BigInteger)
    crcs: Mapped[list[int]] = mapped_column(JSON)


class UserRow(Base):
    __tablename__ = "ceph_mon_users"
    access_key: Mapped[str] = mapped_column(String(128), primary_key=True)
    uid: Mapped[str] = mapped_column(String(64))
    tenant: Mapped[str] = mapped_column(String(64))
    display_name: Mapped[str] = mapped_column(Text)
    email: Mapped[str] = mapped_column(Text)
    secret_key: Mapped[str] = mapped_column(Text)


class FaultRow(Base):
    __tablename__ = "ceph_mon_faults"
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    kind: Mapped[str] = mapped_column(String(16))
    osd: Mapped[int] = mapped_column(Integer)
    factor: Mapped[float] = mapped_column(Float)
    pool: Mapped[str] = mapped_column(Text)
    object: Mapped[str] = mapped_column(Text)
    injected_at: Mapped[float] = mapped_column(Float)
    active: Mapped[bool] = mapped_column(Boolean)
    cleared_at: Mapped[float] = mapped_column(Float)
    effect: Mapped[str] = mapped_column(Text)


TABLES: list[type[Base]] = [OsdMapRow, OsdRow, PgRow, ObjectRow, UserRow, FaultRow]


def pg_row(pg: PlacementGroup) -> dict[str, Any]:
    return {"pgid": str(pg.pgid), "acting": pg.acting, "up": pg.up, "holders": pg.holders,
            "targets": {str(p): o for p, o in pg.targets.items()},
            "missing": {str(p): sorted(s) for p, s in pg.missing.items() if s},
            "backfilled": {str(p): sorted(s) for p, s in pg.backfilled.items()}}


def apply_pg_row(pg: PlacementGroup, r: PgRow) -> None:
    pg.acting, pg.up, pg.holders = list(r.acting), list(r.up), list(r.holders)
    pg.targets = {int(p): o for p, o in r.targets.items()}
    pg.missing = {int(p): set(s) for p, s in r.missing.items()}
    pg.backfilled = {int(p): set(s) for p, s in r.backfilled.items()}


class MonStore:
    def __init__(self, url: str) -> None:
        self.engine = make_engine(url)
        create_tables(self.engine, TABLES)
        self._upsert_of = upserts(self.engine.dialect.name, TABLES)
        self.writer = Writer(self.engine)
        self._delete_object = delete(ObjectRow).where(ObjectRow.pg == bindparam("pg"),
                                                      ObjectRow.name == bindparam("name"))

    def _upsert(self, c: Connection, row: type[Base], values: dict[str, Any] | list[dict[str, Any]]) -> None:
        c.execute(self._upsert_of[row], values)

    def save_object(self, pg: PlacementGroup, name: str) -> None:
        """After a write or remove of `name`: its row (or its absence) and its PG's row, in one commit."""
        self.save_objects([(pg, name)])

    def save_objects(self, objs: list[tuple[PlacementGroup, str]]) -> None:
        """`save_object` of several objects, in one commit (one statement per kind of row: a group of
        RGW's writes or removals costs about what one does)."""
        if not objs:
            return
        last = {(str(pg.pgid), name): pg for pg, name in objs}
        ups, dels = [], []
        for (pgid, name), pg in last.items():
            info = pg.objects.get(name)
            if info is None:
                dels.append({"pg": pgid, "name": name})
            else:
                ups.append({"pg": pgid, "name": name, "size": info.size, "crcs": list(info.crcs)})
        with self.writer.transaction() as c:
            if dels:
                c.execute(self._delete_object, dels)
            if ups:
                self._upsert(c, ObjectRow, ups)
            self._upsert(c, PgRow, [pg_row(pg) for pg in {id(pg): pg for pg in last.values()}.values()])

    def save_map(self, cluster: Cluster) -> None:
        """After an OSD-map change or recovery: the map, every OSD and every PG's peering state."""
        mon = cluster.monitor
        life = mon._life
        osds = [{"id": o.id, "up": o.up, "in": o.in_, "weight": o.weight,
                 "auto_out": life[o.id].auto_out if o.id in life else False,
                 "down_at": life[o.id].down_at if o.id in life else None} for o in cluster.crush.osds.values()]
        with self.writer.transaction() as c:
            self._upsert(c, OsdMapRow, {"id": 1, "epoch": mon.epoch, "flags": sorted(mon.flags),
                                        "last_up_change": mon.last_up_change, "last_in_change": mon.last_in_change})
            self._upsert(c, OsdRow, osds)
            self._upsert(c, PgRow, [pg_row(pg) for pg in cluster.pgs.values()])

    def save_user(self, user: User) -> None:
        with self.writer.transaction() as c:
            self._upsert(c, UserRow, asdict(user))

    def save_fault(self, fault: Fault) -> None:
        with self.writer.transaction() as c:
            self._upsert(c, FaultRow, asdict(fault))

    def users(self) -> list[User]:
        with Session(self.engine) as s:
            return [User(r.uid, r.display_name, r.email, r.tenant, r.access_key, r.secret_key)
                    for r in s.scalars(select(UserRow).order_by(UserRow.access_key))]

    def faults(self) -> list[Fault]:
        with Session(self.engine) as s:
            return [Fault(id=r.id, kind=r.kind, osd=r.osd, factor=r.factor, pool=r.pool, object=r.object,
                          injected_at=r.injected_at, active=r.active, cleared_at=r.cleared_at, effect=r.effect)
                    for r in s.scalars(select(FaultRow).order_by(FaultRow.injected_at))]

    def load(self, cluster: Cluster) -> bool:
        """Put the saved state into a freshly built `cluster`; False if there was none."""
        with Session(self.engine) as s:
            osdmap = s.get(OsdMapRow, 1)
            if osdmap is None:
                return False
            mon = cluster.monitor
            for r in s.scalars(select(OsdRow)):
                osd = cluster.crush.osds.get(r.id)
                if osd is None:
                    continue
                osd.up, osd.in_, osd.weight = r.up, r.in_, r.weight
                life = mon._life.get(osd.id)
                if life is not None:
                    life.auto_out, life.down_at = r.auto_out, r.down_at
            mon.epoch, mon.flags = osdmap.epoch, set(osdmap.flags)
            mon.last_up_change, mon.last_in_change = osdmap.last_up_change, osdmap.last_in_change
            for r in s.scalars(select(PgRow)):
                pg = cluster.pgs.get(PgId.parse(r.pgid))
                if pg is not None:
                    apply_pg_row(pg, r)
            for r in s.scalars(select(ObjectRow)):
                pg = cluster.pgs.get(PgId.parse(r.pg))
                if pg is not None:
                    pg.objects[r.name] = ObjectInfo(r.name, int(r.size), tuple(r.crcs))
        cluster._peered_epoch = mon.epoch
        return True

    def close(self) -> None:
        self.writer.close()
        self.engine.dispose()
