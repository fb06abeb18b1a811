"""State store plumbing: one SQLAlchemy engine per daemon.

SQLite in the run directory by default (one file per daemon, as each real daemon owns its disk);
any SQLAlchemy URL (e.g. postgresql+psycopg://...) puts every daemon's tables in that database,
keyed by node name. WAL with synchronous=NORMAL survives a kill -9 of the process: what was
committed before an acknowledgement is on disk for the restarted daemon.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sqlalchemy import JSON, Connection, Engine, Float, Integer, String, create_engine, event, text
from sqlalchemy.dialects import postgresql, sqlite
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


def upserts(dialect: str, models: list[type[Base]]) -> dict[type[Base], Any]:
    """One INSERT ... ON CONFLICT DO UPDATE per table (SQLite >= 3.24 and PostgreSQL alike), built once:
    a row replaced in one statement rather than a delete and an insert, on a daemon's hot path."""
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    out: dict[type[Base], Any] = {}
    for row in models:
        table = row.__table__
        stmt = insert(table)
        keys = [c.name for c in table.primary_key.columns]   # type: ignore[attr-defined]
        rest = {c.name: stmt.excluded[c.name] for c in table.columns if c.name not in keys}   # type: ignore[attr-defined]
        out[row] = stmt.on_conflict_do_update(index_elements=keys, set_=rest)
    return out


class Writer:
    """A daemon's write transactions on one kept connection, one at a time: a pool checkout per
    transaction cost as much as its statements on the hot paths (an MDS create, a monitor commit)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._lock = threading.Lock()
        self._conn: Connection | None = None

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Connection]:
        """A transaction, committed when the block ends (rolled back if it raises)."""
        with self._lock:
            if self._conn is None:
                self._conn = self.engine.connect()
            with self._conn.begin():
                yield self._conn

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


class Prepared:
    """A hot write statement compiled once. On SQLite it runs through the driver's cursor, with its
    parameters put through their columns' own bind processors (JSON, Boolean), as SQLAlchemy would: its
    per-execution setup cost more than the statement itself (an MDS create's row). On other dialects
    (PostgreSQL) it runs through SQLAlchemy."""

    def __init__(self, engine: Engine, stmt: Any) -> None:
        self.stmt = stmt
        self.sql: str | None = None
        dialect = engine.dialect
        if dialect.name == "sqlite":
            compiled = stmt.compile(dialect=dialect)
            if compiled.positiontup is not None:
                self.sql = compiled.string
                self.params = [(n, _none_once(compiled.binds[n].type.dialect_impl(dialect).bind_processor(dialect)))
                               for n in compiled.positiontup]

    def execute(self, conn: Connection, rows: list[dict[str, Any]]) -> None:
        """The statement once per row of `rows`, in `conn`'s transaction."""
        if self.sql is None:
            conn.execute(self.stmt, rows)
            return
        params = [[r[n] if p is None else p(r[n]) for n, p in self.params] for r in rows]
        cur = conn.connection.dbapi_connection.cursor()
        try:
            cur.executemany(self.sql, params)
        finally:
            cur.close()


def _none_once(process: Any) -> Any:
    """A bind processor with its answer for None worked out once (a JSON column's 'null'): most of a
    row's JSON columns are empty."""
    if process is None:
        return None
    empty = process(None)
    return lambda v: empty if v is None else process(v)


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
