"""Stopping a twin's Slurm stops what the twin started and nothing else (issue 13, case 1).

The user has `SLURM_CONF` exported, as `twin slurm up` tells them to. `twin slurm down` and `twin down`
then still exit 0, stop the daemons and the jobs' processes (found in the cgroup the twin recorded,
also after the Slurm daemon process was killed -9), and leave alone an unrelated process that has
the same SLURM_CONF in its environment."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from emulator.client import Twin
from emulator.procutil import pid_alive
from services.slurm import lifecycle
from tests.conftest import assert_nothing_left, stopped_at_exit, twin_pids
from tests.slurm.conftest import needs_slurm, wait_for
from tests.slurm.test_slurm_twin import TWIN

pytestmark = needs_slurm


def conf(run: Path) -> str:
    return str(run / "slurm" / "slurm.conf")


def twin_with_slurm_conf(run: Path, *args: str) -> subprocess.CompletedProcess:
    """`twin ARGS --run-dir RUN` from a shell that exported SLURM_CONF for this twin's Slurm."""
    return subprocess.run([TWIN, *args, "--run-dir", str(run)], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, SLURM_CONF=conf(run), COLUMNS="200"))


def slurm_up(run: Path) -> dict[str, int]:
    """`twin slurm up`; the daemons' pids as the Slurm daemon process recorded them (and its own)."""
    r = twin_with_slurm_conf(run, "slurm", "up")
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads((run / "slurm" / "state.json").read_text())
    return doc["pids"] | {"twin-slurm": doc["pid"]}


def start_job(run: Path, name: str) -> int:
    """A batch job that runs until it is killed; the pid of its process (not a Slurm daemon)."""
    pid_file = run / f"{name}.pid"
    subprocess.run(["sbatch", "-J", name, "--wrap", f"echo $$ > {pid_file}; exec sleep 300"], check=True,
                   capture_output=True, timeout=30, cwd=run, env=dict(os.environ, SLURM_CONF=conf(run)))
    return int(wait_for(lambda: pid_file.exists() and pid_file.read_text().strip(), 30, f"job {name} to start"))


@pytest.fixture(scope="module")
def rack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Twin]:
    twin = Twin.up("rack", run_dir=tmp_path_factory.mktemp("slurm-teardown"), timeout=60)
    with stopped_at_exit(twin.run, twin.down):
        yield twin


@pytest.fixture
def other(rack: Twin) -> Iterator[subprocess.Popen]:
    """`env SLURM_CONF=<this twin's slurm.conf> sleep 300`, started by the test, not by the twin."""
    proc = subprocess.Popen(["env", f"SLURM_CONF={conf(rack.run.path)}", "sleep", "300"])
    yield proc
    proc.kill()
    proc.wait()


def test_slurm_down_with_slurm_conf_exported(rack: Twin, other: subprocess.Popen) -> None:
    run = rack.run.path
    daemons = slurm_up(run)
    job = start_job(run, "one")
    r = twin_with_slurm_conf(run, "slurm", "down")
    assert r.returncode == 0, f"twin slurm down -> {r.returncode}\n{r.stdout}{r.stderr}"
    assert f"slurm daemon {daemons['twin-slurm']}" in r.stdout
    assert not [k for k, p in daemons.items() if pid_alive(p)] and not pid_alive(job)
    assert not (run / "slurm" / "cgroup").exists()
    assert other.poll() is None, "an unrelated process with the same SLURM_CONF was killed"


def test_a_killed_slurm_daemon_leaves_its_jobs_to_slurm_down(rack: Twin, other: subprocess.Popen) -> None:
    run = rack.run.path
    daemons = slurm_up(run)
    job = start_job(run, "two")
    cgroup = Path((run / "slurm" / "cgroup").read_text().strip())
    os.kill(daemons["twin-slurm"], signal.SIGKILL)   # its daemons die with it; the job's step does not
    wait_for(lambda: not [p for p in daemons.values() if pid_alive(p)], 15, "the Slurm daemons to die")
    assert pid_alive(job) and lifecycle.running(rack.run) is None
    r = twin_with_slurm_conf(run, "slurm", "down")
    assert r.returncode == 0, f"twin slurm down -> {r.returncode}\n{r.stdout}{r.stderr}"
    assert "leftover process(es)" in r.stdout
    assert not pid_alive(job) and not cgroup.exists()
    assert other.poll() is None, "an unrelated process with the same SLURM_CONF was killed"


def test_twin_down_with_slurm_conf_exported(rack: Twin, other: subprocess.Popen) -> None:
    run = rack.run.path
    daemons = slurm_up(run)
    job = start_job(run, "three")
    pids = twin_pids(rack.run)
    r = twin_with_slurm_conf(run, "down")
    assert r.returncode == 0, f"twin down -> {r.returncode}\n{r.stdout}{r.stderr}"
    assert f"slurm daemon {daemons['twin-slurm']}" in r.stdout and "supervisor" in r.stdout
    assert_nothing_left(rack.run, pids)   # supervisor, broker, GPU daemons
    assert not [k for k, p in daemons.items() if pid_alive(p)] and not pid_alive(job)
    assert other.poll() is None, "an unrelated process with the same SLURM_CONF was killed"
