"""`store_url` against a real PostgreSQL: every daemon's state in one database, surviving kill -9."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from emulator import lifecycle
from emulator.client import Twin
from emulator.procutil import pid_alive
from emulator.rundir import RunDir
from tests.conftest import assert_nothing_left, twin_pids
from tests.pg import PostgresServer, skip_reason

TABLES = ("gpu_node_state", "gpu_node_leases", "gpu_node_faults", "gpu_node_events")


@pytest.fixture(scope="module")
def postgres() -> Iterator[PostgresServer]:
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    with PostgresServer() as pg:
        yield pg


def daemon_status(twin: Twin, name: str) -> dict:
    return json.loads(twin.run.daemons.read_text())["daemons"][name]


def wait_until(predicate, timeout: float, what: str) -> None:  # noqa: ANN001 - any callable
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.1)


def test_state_lives_in_postgres_and_survives_a_daemon_kill(postgres: PostgresServer, tmp_path: Path) -> None:
    import psycopg

    with Twin.up("mini", run_dir=tmp_path / "pg", store_url=postgres.url, timeout=60) as twin:
        pids = twin_pids(twin.run)
        try:
            node = twin.gpu_node("gpu001")
            lease = node.lease("job-pg", count=2)
            fault = node.inject_fault("thermal", gpu=7)
            assert lease.active and fault.active
            other = twin.gpu_node("gpu002")
            mig = other.gpu(0).mig_enabled   # mini's last server is the MIG one
            other_lease = other.lease("job-pg-2", count=1, mig_profile="1g.10gb" if mig else "")
            other_fault = other.inject_fault("thermal", gpu=1)

            before = daemon_status(twin, "gpu001")
            os.kill(before["pid"], signal.SIGKILL)
            wait_until(lambda: daemon_status(twin, "gpu001")["restarts"] > before["restarts"]
                       and daemon_status(twin, "gpu001")["pid"] not in (0, before["pid"]),
                       30, "the supervisor to restart gpu001")
            assert not pid_alive(before["pid"])

            def gpu001_serving() -> bool:
                rows = {d["name"]: d for d in twin.status()["daemons"]}
                return rows["gpu001"]["health"] == "SERVING"
            wait_until(gpu001_serving, 30, "the restarted gpu001 to answer its health check")

            leases = {x.id: x for x in node.leases()}
            assert lease.id in leases, f"lease {lease.id} lost across the restart: {list(leases)}"
            assert leases[lease.id].active and leases[lease.id].job_id == "job-pg"
            assert list(leases[lease.id].devices) == list(lease.devices)
            faults = {f.id: f for f in node.faults()}
            assert fault.id in faults, f"fault {fault.id} lost across the restart: {list(faults)}"
            assert faults[fault.id].active and faults[fault.id].gpu == 7

            # The rows are in PostgreSQL, keyed by node, for both servers (gpu002 got its own
            # lease and fault above, so every table has something of each).
            with psycopg.connect(postgres.dsn) as conn:
                for table in TABLES:
                    nodes = {n for (n,) in conn.execute(f"SELECT DISTINCT node FROM {table}")}
                    assert {"gpu001", "gpu002"} <= nodes, f"{table}: rows only for {sorted(nodes)}"
                for node_name, lease_id, fault_id, job in (("gpu001", lease.id, fault.id, "job-pg"),
                                                           ("gpu002", other_lease.id, other_fault.id, "job-pg-2")):
                    assert conn.execute("SELECT job_id, active FROM gpu_node_leases WHERE node = %s AND id = %s",
                                        (node_name, lease_id)).fetchone() == (job, True)
                    assert conn.execute("SELECT active FROM gpu_node_faults WHERE node = %s AND id = %s",
                                        (node_name, fault_id)).fetchone() == (True,)

            assert not list(twin.run.state.glob("*.db*")), \
                f"SQLite files created despite store_url: {sorted(p.name for p in twin.run.state.iterdir())}"
        finally:
            pids = sorted(set(pids + twin_pids(twin.run)))
    assert_nothing_left(twin.run, pids)


def test_unreachable_store_url_fails_clearly_and_starts_nothing(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "bad")
    url = "postgresql+psycopg://nobody:secret@127.0.0.1:1/x"
    started = time.monotonic()
    with pytest.raises(lifecycle.TwinError) as failure:
        Twin.up("mini", run_dir=run.path, store_url=url, timeout=60)
    message = str(failure.value)
    assert time.monotonic() - started < 60, "a bad store must fail at once, not at the health deadline"
    assert message.startswith("cannot reach state store postgresql+psycopg://nobody:***@127.0.0.1:1/x"), message
    assert "Connection refused" in message and "secret" not in message
    assert run.running_supervisor() is None and not run.manifest.exists()
    with pytest.raises(lifecycle.TwinError, match="not a SQLAlchemy URL"):
        Twin.up("mini", run_dir=run.path, store_url="not a url", timeout=60)
