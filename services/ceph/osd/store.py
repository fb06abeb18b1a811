"""An OSD daemon's own state beside its chunks: whether it is stopped (`twin ceph osd stop`, which
stays so across a kill -9 and the supervisor's restart until `start`) and its slow-disk factor, in
one row of `ceph_osd_state` (`sqlite3 state/osd.3.db 'select * from ceph_osd_state'`), committed
before the fault call returns. The chunks themselves are in a log of segment files (logstore.py).
"""

from __future__ import annotations

import time

from sqlalchemy import Boolean, Float, String
from sqlalchemy.orm import Mapped, Session, mapped_column

from emulator.store import Base, create_tables, make_engine


class OsdStateRow(Base):
    __tablename__ = "ceph_osd_state"
    name: Mapped[str] = mapped_column(String(64), primary_key=True)   # osd.N
    stopped: Mapped[bool] = mapped_column(Boolean, default=False)
    slow_factor: Mapped[float] = mapped_column(Float, default=1.0)
    updated_at: Mapped[float] = mapped_column(Float)


class OsdStore:
    def __init__(self, url: str, name: str) -> None:
        self.name = name
        self.engine = make_engine(url)
        create_tables(self.engine, [OsdStateRow])

    def load(self) -> tuple[bool, float]:
        """(stopped, slow factor); a first boot is running and healthy."""
        with Session(self.engine) as s:
            row = s.get(OsdStateRow, self.name)
            return (False, 1.0) if row is None else (row.stopped, row.slow_factor)

    def save(self, stopped: bool, slow_factor: float) -> None:
        with Session(self.engine) as s, s.begin():
            s.merge(OsdStateRow(name=self.name, stopped=stopped, slow_factor=slow_factor, updated_at=time.time()))

    def close(self) -> None:
        self.engine.dispose()
