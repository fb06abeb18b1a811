"""An OSS's faults (`twin lustre fault`, the LustreOss fault RPCs), kept in its store so that a restarted
OSS comes back with them: an `oss-kill` keeps it serving nothing, an `ost-full` keeps its OST full.

Rows: one per fault ever injected on this OSS (id, kind, OST, twin-clock times, active, effect). The
model here only records and answers; the daemon applies (services/lustre/oss/daemon.py).
"""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass

from sqlalchemy import Boolean, Float, Integer, String, select
from sqlalchemy.orm import Mapped, Session, mapped_column

from emulator.store import Base, create_tables, make_engine
from services.lustre.errors import LustreError

KINDS = ("oss-kill", "ost-full")


class FaultRow(Base):
    __tablename__ = "lustre_oss_faults"
    node: Mapped[str] = mapped_column(String(64), primary_key=True)
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    kind: Mapped[str] = mapped_column(String(16))
    ost: Mapped[int | None] = mapped_column(Integer, nullable=True)
    injected_at: Mapped[float] = mapped_column(Float)
    active: Mapped[bool] = mapped_column(Boolean)
    cleared_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    effect: Mapped[str] = mapped_column(String(300))


@dataclass
class OssFault:
    id: str
    kind: str
    oss: str
    ost: int | None
    injected_at: float
    active: bool
    cleared_at: float | None
    effect: str

    def doc(self) -> dict:
        return asdict(self)


class FaultLog:
    """The faults of OSS `node`, every change committed before it returns. Thread-safe."""

    def __init__(self, store_url: str, node: str) -> None:
        self.node = node
        self.engine = make_engine(store_url)
        create_tables(self.engine, [FaultRow])
        self.lock = threading.RLock()
        with Session(self.engine) as s:
            rows = s.scalars(select(FaultRow).where(FaultRow.node == node)).all()
            self.faults = {r.id: OssFault(r.id, r.kind, node, r.ost, r.injected_at, r.active, r.cleared_at, r.effect)
                           for r in rows}

    def close(self) -> None:
        self.engine.dispose()

    def _save(self, f: OssFault) -> None:
        with Session(self.engine) as s, s.begin():
            s.merge(FaultRow(node=self.node, id=f.id, kind=f.kind, ost=f.ost, injected_at=f.injected_at,
                             active=f.active, cleared_at=f.cleared_at, effect=f.effect))

    def active(self, kind: str, ost: int | None = None) -> list[OssFault]:
        with self.lock:
            return [f for f in self.faults.values() if f.active and f.kind == kind and (ost is None or f.ost == ost)]

    def add(self, kind: str, ost: int | None, now: float, effect: str) -> OssFault:
        """Record a new fault; EINVAL for an unknown kind, EBUSY while the same one is active."""
        if kind not in KINDS:
            raise LustreError("EINVAL", f"unknown OSS fault kind {kind!r}: one of {', '.join(KINDS)}")
        with self.lock:
            same = self.active(kind, ost)
            if same:
                raise LustreError("EBUSY", f"{same[0].id} is already active: clear it first")
            tag = "down" if kind == "oss-kill" else f"OST{ost:04x}-full"
            f = OssFault(f"{self.node}-{tag}-{len(self.faults) + 1}", kind, self.node, ost, now, True, None, effect)
            self._save(f)
            self.faults[f.id] = f
            return f

    def clear(self, fault_id: str, now: float) -> OssFault:
        """Mark a fault cleared; ENOENT for an id this OSS does not hold, EINVAL if it is cleared already."""
        with self.lock:
            f = self.faults.get(fault_id)
            if f is None:
                raise LustreError("ENOENT", f"{self.node} has no fault {fault_id!r}")
            if not f.active:
                raise LustreError("EINVAL", f"fault {fault_id} was cleared already")
            f.active, f.cleared_at = False, now
            self._save(f)
            return f

    def list(self, include_cleared: bool = False) -> list[OssFault]:
        with self.lock:
            return [f for f in self.faults.values() if include_cleared or f.active]
