"""emulator/store.py's Prepared: a hot statement run through SQLite's cursor stores exactly what SQLAlchemy
stores for the same rows (JSON as SQLAlchemy serialises it, None as JSON 'null', booleans as 0/1), inside
the transaction it is given (rolled back with it), on a real SQLite file."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest
from sqlalchemy import JSON, Boolean, Column, Integer, MetaData, String, Table, insert

from emulator.store import Prepared, Writer, make_engine

META = MetaData()
ROWS = Table("rows", META, Column("k", String(8), primary_key=True), Column("n", Integer),
             Column("flag", Boolean), Column("doc", JSON, nullable=True))


def stored(path: str, key: str) -> tuple[Any, ...]:
    with sqlite3.connect(path) as db:
        return db.execute("SELECT n, flag, doc FROM rows WHERE k = ?", (key,)).fetchone()


@pytest.mark.parametrize("doc", [None, {"objects": [[0, 7, 4096]], "gen": 0}, [1, "two", None], "text"])
def test_prepared_stores_what_sqlalchemy_stores(tmp_path, doc):
    path = str(tmp_path / "s.db")
    engine = make_engine(f"sqlite:///{path}")
    META.create_all(engine)
    writer = Writer(engine)
    prepared = Prepared(engine, insert(ROWS))
    assert prepared.sql is not None   # the driver's path, not SQLAlchemy's
    with writer.transaction() as conn:
        prepared.execute(conn, [{"k": "fast", "n": 5, "flag": True, "doc": doc}])
        conn.execute(insert(ROWS), [{"k": "slow", "n": 5, "flag": True, "doc": doc}])
    assert stored(path, "fast") == stored(path, "slow")
    writer.close()
    engine.dispose()


def test_prepared_rows_go_with_a_rolled_back_transaction(tmp_path):
    path = str(tmp_path / "s.db")
    engine = make_engine(f"sqlite:///{path}")
    META.create_all(engine)
    writer = Writer(engine)
    prepared = Prepared(engine, insert(ROWS))
    with pytest.raises(RuntimeError), writer.transaction() as conn:
        prepared.execute(conn, [{"k": "gone", "n": 1, "flag": False, "doc": None}])
        raise RuntimeError("the transaction fails after the row was written")
    assert stored(path, "gone") is None
    with writer.transaction() as conn:
        prepared.execute(conn, [{"k": "kept", "n": 2, "flag": False, "doc": None}])
    assert stored(path, "kept") == (2, 0, "null")
    writer.close()
    engine.dispose()
