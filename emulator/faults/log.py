"""The twin's fault log: one SQLAlchemy table in the run directory (state/faults.db).

Why a table and not the bus: the bus publisher drops its oldest messages when a broker is slow, and a
cleared fault's retained message is removed, so the bus cannot answer "what was injected, and is it
still on?". The table is durable across a kill -9 (WAL), shared by every process that injects (the
CLI, drills, the chaos thrasher, users' scripts) and numbers the faults in one sequence. The bus is
the feed: every row written is also published (emulator/faults/publish.py).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import Boolean, Engine, Float, Integer, String, Text, select
from sqlalchemy.orm import Mapped, Session, mapped_column

from emulator import store
from emulator.errors import NotFound
from emulator.events import FaultPayload
from emulator.rundir import RunDir


class FaultRow(store.Base):
    __tablename__ = "twin_faults"

    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    subsystem: Mapped[str] = mapped_column(String(16))
    target: Mapped[str] = mapped_column(String(200))
    kind: Mapped[str] = mapped_column(String(32))
    params: Mapped[str] = mapped_column(Text, default="{}")
    backend_id: Mapped[str] = mapped_column(String(200), default="")
    active: Mapped[bool] = mapped_column(Boolean, default=True)
    injected_at: Mapped[float] = mapped_column(Float)
    cleared_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    effect: Mapped[str] = mapped_column(Text, default="")

    @property
    def id(self) -> str:
        return f"fault-{self.seq}"

    def payload(self) -> FaultPayload:
        return FaultPayload(id=self.id, subsystem=self.subsystem, target=self.target, kind=self.kind,
                            params=json.loads(self.params), backend_id=self.backend_id, active=self.active,
                            injected_at=self.injected_at, cleared_at=self.cleared_at, effect=self.effect)


_ENGINES: dict[Path, tuple[int, Engine]] = {}   # per database file and process: Twin.faults() is called often


def _engine(run: RunDir) -> Engine:
    """The log's engine, made again when the file is not the one it was made for (a new twin in the
    same run directory)."""
    db = run.state / "faults.db"
    inode, engine = _ENGINES.get(db, (-1, None))
    if engine is not None and db.exists() and db.stat().st_ino == inode:
        return engine
    if engine is not None:
        engine.dispose()
    run.state.mkdir(parents=True, exist_ok=True)
    engine = store.make_engine(store.store_url(None, run.state, "faults"))
    store.create_tables(engine, [FaultRow])
    _ENGINES[db] = (db.stat().st_ino, engine)
    return engine


def seq_of(fault_id: str) -> int | None:
    """fault-7 -> 7; None for anything else."""
    head, _, n = fault_id.partition("-")
    return int(n) if head == "fault" and n.isdigit() else None


class FaultLog:
    def __init__(self, run: RunDir, now: Callable[[], float] = time.time) -> None:
        self.now = now   # the twin's clock, so the log's times agree with the daemons' under --clock-scale
        self.engine = _engine(run)

    def add(self, subsystem: str, target: str, kind: str, params: dict[str, Any], backend_id: str,
            effect: str) -> FaultPayload:
        with Session(self.engine) as s, s.begin():
            row = FaultRow(subsystem=subsystem, target=target, kind=kind, params=json.dumps(params, sort_keys=True),
                           backend_id=backend_id, active=True, injected_at=self.now(), effect=effect)
            s.add(row)
            s.flush()
            return row.payload()

    def get(self, fault_id: str) -> FaultPayload | None:
        seq = seq_of(fault_id)
        if seq is None:
            return None
        with Session(self.engine) as s:
            row = s.get(FaultRow, seq)
            return row.payload() if row else None

    def mark_cleared(self, fault_id: str, effect: str | None = None) -> FaultPayload:
        """Mark a fault cleared (once: clearing a cleared fault changes nothing); the row after."""
        with Session(self.engine) as s, s.begin():
            row = s.get(FaultRow, seq_of(fault_id))
            if row is None:
                raise NotFound(f"no fault {fault_id!r} in the twin's fault log")
            if row.active:
                row.active, row.cleared_at = False, self.now()
                if effect:
                    row.effect = effect
            return row.payload()

    def list(self, include_cleared: bool = False, subsystem: str | None = None) -> list[FaultPayload]:
        q = select(FaultRow).order_by(FaultRow.seq)
        if not include_cleared:
            q = q.where(FaultRow.active.is_(True))
        if subsystem:
            q = q.where(FaultRow.subsystem == subsystem)
        with Session(self.engine) as s:
            return [r.payload() for r in s.scalars(q)]
