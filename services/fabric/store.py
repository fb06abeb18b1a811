"""Persistence of what an operator changed on the fabric: disabled cables, ports marked unhealthy,
partitions, and the event log. Everything else (port states, LIDs, routes) is read back from the
subnet, so it is not kept.

Tables a person can query (`sqlite3 state/fabric.db 'select * from fabric_disabled_cables'`),
keyed by the fabric manager's name so one database can hold several twins' fabrics. Every save is
one transaction, committed before the manager answers the request that caused it: a fabric manager
killed with -9 comes back to the fabric it left (`FabricManager.start` applies what `load` returns).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import JSON, Boolean, Integer, String, delete, select
from sqlalchemy.orm import Mapped, Session, mapped_column

from emulator.store import Base, EventColumns, create_tables, make_engine
from services.fabric.partitions import Partition


class DisabledCableRow(Base):
    __tablename__ = "fabric_disabled_cables"
    fabric: Mapped[str] = mapped_column(String(64), primary_key=True)
    node: Mapped[str] = mapped_column(String(64), primary_key=True)   # the end that was unlinked
    port: Mapped[int] = mapped_column(Integer, primary_key=True)


class UnhealthyPortRow(Base):
    __tablename__ = "fabric_unhealthy_ports"
    fabric: Mapped[str] = mapped_column(String(64), primary_key=True)
    name: Mapped[str] = mapped_column(String(64), primary_key=True)   # UFM port name
    doc: Mapped[dict[str, Any]] = mapped_column(JSON)


class PartitionRow(Base):
    __tablename__ = "fabric_partitions"
    fabric: Mapped[str] = mapped_column(String(64), primary_key=True)
    pkey: Mapped[int] = mapped_column(Integer, primary_key=True)
    position: Mapped[int] = mapped_column(Integer)   # partitions.conf is written in this order
    name: Mapped[str] = mapped_column(String(64))
    ipoib: Mapped[bool] = mapped_column(Boolean)
    members: Mapped[list[Any]] = mapped_column(JSON)  # [[port GUID, "full" | "limited"], ...]


class EventRow(EventColumns, Base):
    __tablename__ = "fabric_events"
    fabric: Mapped[str] = mapped_column(String(64), primary_key=True)


@dataclass
class Saved:
    """What `FabricStore.load` found: the manager's operator state."""

    disabled: list[tuple[str, int]] = field(default_factory=list)
    unhealthy: dict[str, dict[str, Any]] = field(default_factory=dict)
    partitions: list[Partition] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)


class FabricStore:
    def __init__(self, url: str, fabric: str) -> None:
        self.fabric = fabric
        self.engine = make_engine(url)
        create_tables(self.engine, [DisabledCableRow, UnhealthyPortRow, PartitionRow, EventRow])

    def load(self, events: int = 1000) -> Saved:
        """The last committed state, with the newest `events` events (oldest first)."""
        f = self.fabric
        with Session(self.engine) as s:
            disabled = [(r.node, r.port) for r in s.scalars(
                select(DisabledCableRow).where(DisabledCableRow.fabric == f)
                .order_by(DisabledCableRow.node, DisabledCableRow.port))]
            unhealthy = {r.name: dict(r.doc) for r in s.scalars(
                select(UnhealthyPortRow).where(UnhealthyPortRow.fabric == f))}
            partitions = [Partition(r.name, r.pkey, tuple((int(g), str(m)) for g, m in r.members), r.ipoib)
                          for r in s.scalars(select(PartitionRow).where(PartitionRow.fabric == f)
                                             .order_by(PartitionRow.position))]
            newest = s.scalars(select(EventRow).where(EventRow.fabric == f).order_by(EventRow.seq.desc())
                               .limit(events))
            return Saved(disabled, unhealthy, partitions, [dict(r.doc) for r in reversed(list(newest))])

    def save(self, disabled: list[tuple[str, int]], unhealthy: dict[str, dict[str, Any]],
             partitions: list[Partition]) -> None:
        """Replace the operator state (it is small: rewritten whole, in one transaction)."""
        f = self.fabric
        with Session(self.engine) as s, s.begin():
            for table in (DisabledCableRow, UnhealthyPortRow, PartitionRow):
                s.execute(delete(table).where(table.fabric == f))
            s.add_all(DisabledCableRow(fabric=f, node=node, port=port) for node, port in sorted(set(disabled)))
            s.add_all(UnhealthyPortRow(fabric=f, name=name, doc=doc) for name, doc in unhealthy.items())
            s.add_all(PartitionRow(fabric=f, pkey=p.pkey, position=i, name=p.name, ipoib=p.ipoib,
                                   members=[list(m) for m in p.members]) for i, p in enumerate(partitions))

    def add_event(self, event: dict[str, Any], keep: int = 1000) -> None:
        """Append an event; only the newest `keep` are kept."""
        with Session(self.engine) as s, s.begin():
            s.add(EventRow(fabric=self.fabric, seq=int(event["seq"]), time=float(event["time"]),
                           kind=str(event["kind"]), doc=event))
            s.execute(delete(EventRow).where(EventRow.fabric == self.fabric, EventRow.seq <= int(event["seq"]) - keep))

    def close(self) -> None:
        self.engine.dispose()
