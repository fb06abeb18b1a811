"""Persistence of one GPU server's state: the node document, its leases, faults and event log.

The model serialises itself (`NodeModel.to_state()`); this module keeps that state in tables a
person can query (`sqlite3 state/gpu001.db 'select * from gpu_node_leases'`). Every save is one
transaction, committed before the daemon acknowledges the request that caused it.
"""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy import JSON, Boolean, Float, Integer, String, delete, select
from sqlalchemy.orm import Mapped, Session, mapped_column

from emulator.store import Base, EventColumns, create_tables, make_engine


class NodeRow(Base):
    __tablename__ = "gpu_node_state"
    node: Mapped[str] = mapped_column(String(64), primary_key=True)
    boot_id: Mapped[int] = mapped_column(Integer, default=0)
    doc: Mapped[dict[str, Any]] = mapped_column(JSON)
    updated_at: Mapped[float] = mapped_column(Float)


class LeaseRow(Base):
    __tablename__ = "gpu_node_leases"
    node: Mapped[str] = mapped_column(String(64), primary_key=True)
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    job_id: Mapped[str] = mapped_column(String(256), default="")
    active: Mapped[bool] = mapped_column(Boolean, default=True)
    doc: Mapped[dict[str, Any]] = mapped_column(JSON)


class FaultRow(Base):
    __tablename__ = "gpu_node_faults"
    node: Mapped[str] = mapped_column(String(64), primary_key=True)
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    active: Mapped[bool] = mapped_column(Boolean, default=True)
    doc: Mapped[dict[str, Any]] = mapped_column(JSON)


class EventRow(EventColumns, Base):
    __tablename__ = "gpu_node_events"
    node: Mapped[str] = mapped_column(String(64), primary_key=True)
    gpu: Mapped[int] = mapped_column(Integer)


class NodeStore:
    def __init__(self, url: str, node: str) -> None:
        self.node = node
        self.engine = make_engine(url)
        create_tables(self.engine, [NodeRow, LeaseRow, FaultRow, EventRow])

    def load(self) -> dict[str, Any] | None:
        """The last committed state of this node, or None on first boot."""
        with Session(self.engine) as s:
            row = s.get(NodeRow, self.node)
            if row is None:
                return None
            state = dict(row.doc)
            state["leases"] = [r.doc for r in s.scalars(select(LeaseRow).where(LeaseRow.node == self.node))]
            state["faults"] = [r.doc for r in s.scalars(select(FaultRow).where(FaultRow.node == self.node))]
            return state

    def save(self, state: dict[str, Any], events: list[dict[str, Any]]) -> None:
        doc = {k: v for k, v in state.items() if k not in ("leases", "faults")}
        with Session(self.engine) as s, s.begin():
            s.merge(NodeRow(node=self.node, boot_id=int(doc.get("boot_id", 0)), doc=doc, updated_at=time.time()))
            # Leases and faults are few (the model bounds ended ones): rewrite them whole.
            s.execute(delete(LeaseRow).where(LeaseRow.node == self.node))
            s.execute(delete(FaultRow).where(FaultRow.node == self.node))
            for lease in state.get("leases", []):
                s.add(LeaseRow(node=self.node, id=str(lease["id"]), job_id=str(lease.get("job_id", "")),
                               active=bool(lease.get("active", False)), doc=lease))
            for fault in state.get("faults", []):
                s.add(FaultRow(node=self.node, id=str(fault["id"]), active=bool(fault.get("active", False)),
                               doc=fault))
            for ev in events:
                s.merge(EventRow(node=self.node, seq=int(ev["seq"]), time=float(ev["time"]),
                                 kind=str(ev["kind"]), gpu=int(ev.get("gpu", -1)), doc=ev))

    def events(self, after_seq: int = 0, limit: int = 1000) -> list[dict[str, Any]]:
        with Session(self.engine) as s:
            q = (select(EventRow).where(EventRow.node == self.node, EventRow.seq > after_seq)
                 .order_by(EventRow.seq).limit(limit))
            return [r.doc for r in s.scalars(q)]

    def close(self) -> None:
        self.engine.dispose()

