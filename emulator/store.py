"""State store plumbing: one SQLAlchemy engine per daemon.

SQLite in the run directory by default (one file per daemon, as each real daemon owns its disk);
any SQLAlchemy URL (e.g. postgresql+psycopg://...) puts every daemon's tables in that database,
keyed by node name. WAL with synchronous=NORMAL survives a kill -9 of the process: what was
committed before an acknowledgement is on disk for the restarted daemon.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import JSON, Engine, Float, Integer, String, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError, OperationalError
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from emulator.errors import UserError


class Base(DeclarativeBase):
    pass


class EventColumns:
    """A daemon's event log table: these columns after its own key (its node or fabric name, with `seq`
    the primary key), one row per event as the daemon published it."""

    seq: Mapped[int] = mapped_column(Integer, primary_key=True)
    time: Mapped[float] = mapped_column(Float)
    kind: Mapped[str] = mapped_column(String(32))
    doc: Mapped[dict[str, Any]] = mapped_column(JSON)


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


SCHEMA_LOCK = 7377394821   # any constant: serialises CREATE TABLE across daemons sharing one database


def create_tables(engine: Engine, models: list[type[Base]]) -> None:
    """Create a daemon's tables; daemons starting together on one PostgreSQL database take turns,
    as concurrent CREATE TABLE of the same name fails there."""
    with engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": SCHEMA_LOCK})
        Base.metadata.create_all(conn, tables=[m.__table__ for m in models])


class StoreError(UserError, RuntimeError):
    pass


def check_store(url: str) -> None:
    """Fail fast, with one clear line, on a store URL that is malformed or unreachable."""
    try:
        shown = make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        raise StoreError(f"state store URL {url!r} is not a SQLAlchemy URL (say postgresql+psycopg://HOST/DB)") \
            from None
    try:
        args = {"connect_timeout": 5} if url.startswith("postgresql") else {}
        engine = create_engine(url, connect_args=args)
        with engine.connect():
            pass
        engine.dispose()
    except NoSuchModuleError as e:
        raise StoreError(f"state store {shown}: unsupported database driver ({e})") from None
    except OperationalError as e:
        reason = str(getattr(e, "orig", e)).strip().splitlines()[0]
        raise StoreError(f"cannot reach state store {shown}: {reason}") from None
