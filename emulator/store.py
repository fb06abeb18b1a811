"""State store plumbing: one SQLAlchemy engine per daemon.

SQLite in the run directory by default (one file per daemon, as each real daemon owns its disk);
any SQLAlchemy URL (e.g. postgresql+psycopg://...) puts every daemon's tables in that database,
keyed by node name. WAL with synchronous=NORMAL survives a kill -9 of the process: what was
committed before an acknowledgement is on disk for the restarted daemon.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.orm import DeclarativeBase


class Base(DeclarativeBase):
    pass


def store_url(configured: str | None, state_dir: Path, daemon: str) -> str:
    return configured or f"sqlite:///{state_dir / (daemon + '.db')}"


def make_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"timeout": 30})

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_conn, _record) -> None:  # noqa: ANN001 - DBAPI types
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.close()

        return engine
    return create_engine(url, pool_pre_ping=True)
