"""Stopping a twin's Slurm stops what the twin started and nothing else (issue 13, case 1).

The user has `SLURM_CONF` exported, as `twin slurm up` tells them to. `twin slurm down` and `twin down`
then still exit 0, stop the daemons and the jobs' processes (found in the cgroup the twin recorded,
also after the twin's supervisor was killed -9), and leave alone an unrelated process that has
the same SLURM_CONF in its environment. A Slurm daemon process killed -9 is restarted by the
supervisor with Slurm's state and running jobs."""

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


def supervised(run: Path) -> dict:
    """The supervisor's record of the Slurm daemon (daemons.json)."""
    return json.loads((run / "daemons.json").read_text())["daemons"]["slurm"]


def slurm_ready(run: Path, restarts: int) -> dict | None:
    """Slurm's state document once the daemon process of the `restarts`-th restart reports it ready."""
    rec, doc = supervised(run), json.loads((run / "slurm" / "state.json").read_text())
    ready = rec["restarts"] == restarts and doc["state"] == "ready" and doc["pid"] == rec["pid"]
    return doc if ready else None


def test_a_killed_slurm_daemon_is_restarted_with_its_state_and_jobs(rack: Twin, other: subprocess.Popen) -> None:
    """kill -9 of the Slurm daemon process (its slurmctld, slurmd and munged die with it): the supervisor
    restarts it, and the new process brings the same Slurm back from its StateSaveLocation: the
    drained node with its reason, and the running job, whose step slurmd finds again."""
    run = rack.run.path
    daemons = slurm_up(run)
    before = supervised(run)
    sconf = dict(os.environ, SLURM_CONF=conf(run))
    subprocess.run(["scontrol", "update", "NodeName=gpu002", "State=DRAIN", "Reason=kept across kill -9"],
                   check=True, env=sconf, timeout=30)
    job = start_job(run, "two")
    job_id = subprocess.run(["squeue", "-h", "-n", "two", "-o", "%i"], env=sconf, capture_output=True, text=True,
                            check=True, timeout=30).stdout.strip()
    wait_for(lambda: (run / "slurm" / "state" / "job_state").exists(), 30, "slurmctld to save the job")
    os.kill(daemons["twin-slurm"], signal.SIGKILL)
    doc = wait_for(lambda: slurm_ready(run, before["restarts"] + 1), 120, "the Slurm daemon restarted and ready")
    assert doc["recovered"] and doc["pid"] != daemons["twin-slurm"] and supervised(run)["last_exit"] == "signal 9"
    assert not [k for k, p in daemons.items() if pid_alive(p)], "a daemon of the killed process is still running"
    sinfo = subprocess.run(["sinfo", "-h", "-N", "-p", "regression", "-o", "%N|%T|%E"], env=sconf, capture_output=True,
                           text=True, check=True, timeout=30).stdout
    nodes = {n: (st, reason) for n, st, reason in (line.split("|") for line in sinfo.splitlines())}
    assert set(nodes) == {"gpu001", "gpu002", "gpu003", "gpu004"}
    assert nodes["gpu002"] == ("drained", "kept across kill -9")
    assert pid_alive(job)
    queue = subprocess.run(["squeue", "-h", "-o", "%i|%T"], env=sconf, capture_output=True, text=True, check=True,
                           timeout=30).stdout.split()
    assert f"{job_id}|RUNNING" in queue
    status = twin_with_slurm_conf(run, "slurm", "status").stdout
    assert f"ready (pid {doc['pid']})" in status and "restarted 1 time(s) by the supervisor" in status, status
    r = twin_with_slurm_conf(run, "slurm", "down")
    assert r.returncode == 0 and f"slurm daemon {doc['pid']}" in r.stdout, r.stdout + r.stderr
    assert not pid_alive(job) and not (run / "slurm" / "cgroup").exists()
    assert "slurm" not in json.loads((run / "daemons.json").read_text())["daemons"]
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


def test_twin_down_after_its_supervisor_was_killed(tmp_path_factory: pytest.TempPathFactory) -> None:
    """kill -9 of the supervisor: the Slurm daemon process and its daemons die with it (PR_SET_PDEATHSIG),
    the job's step does not; `twin down` finds it in the cgroup the cluster recorded."""
    twin = Twin.up("rack", run_dir=tmp_path_factory.mktemp("slurm-orphans"), timeout=60)
    with stopped_at_exit(twin.run, twin.down):
        run = twin.run.path
        daemons = slurm_up(run)
        job = start_job(run, "four")
        cgroup = Path((run / "slurm" / "cgroup").read_text().strip())
        os.kill(twin.run.running_supervisor(), signal.SIGKILL)
        wait_for(lambda: not [p for p in daemons.values() if pid_alive(p)], 15, "Slurm to die with the supervisor")
        assert pid_alive(job)
        r = twin_with_slurm_conf(run, "down")
        assert r.returncode == 0, f"twin down -> {r.returncode}\n{r.stdout}{r.stderr}"
        assert "leftover process(es)" in r.stdout
        assert not pid_alive(job) and not cgroup.exists()
