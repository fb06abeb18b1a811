"""`twin slurm` on a running `rack` twin, through the CLI, with the real daemons: live GRES,
scheduling, the health check draining a node on a fatal Xid and resuming it after the twin's
reboot, clean stops (`twin slurm down` and `twin down`), and the refusals."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from emulator import control
from emulator.client import Twin
from emulator.control import ControlError
from emulator.procutil import pid_alive
from services.slurm import lifecycle
from services.slurm.config import SLURMD_TIMEOUT_S
from tests.conftest import assert_nothing_left, twin_pids
from tests.slurm.conftest import needs_slurm, wait_for

pytestmark = needs_slurm

TWIN = str(Path(sys.executable).parent / "twin")
MIG = "gpu:nvidia_h100_80gb_hbm3_"


def twin_cli(*args: str, check: bool = True, timeout: float = 90) -> subprocess.CompletedProcess:
    r = subprocess.run([TWIN, *args], capture_output=True, text=True, timeout=timeout,
                       env=dict(os.environ, COLUMNS="200"))
    assert not check or r.returncode == 0, f"twin {' '.join(args)}: {r.returncode}\n{r.stdout}\n{r.stderr}"
    return r


def slurm(run_dir: Path, *argv: str) -> str:
    return subprocess.run(argv, capture_output=True, text=True, timeout=30, check=True, cwd=run_dir,
                          env=dict(os.environ, SLURM_CONF=str(run_dir / "slurm" / "slurm.conf"))).stdout


def nodes(run_dir: Path) -> dict[str, tuple[str, str, str]]:
    """Node → (state, gres, reason) as sinfo prints them."""
    rows = slurm(run_dir, "sinfo", "-h", "-N", "-p", "regression", "-o", "%N|%T|%G|%E").splitlines()
    return {n: (s, g, r) for n, s, g, r in (row.split("|", 3) for row in rows)}


def slurm_processes(run_dir: Path) -> list[str]:
    """What `pgrep` finds of this twin's Slurm daemons (by their files; the daemon process that runs them
    is a fork of the supervisor, checked by its recorded pid)."""
    found = subprocess.run(["pgrep", "-a", "-f", f"{run_dir}/slurm/"], capture_output=True, text=True).stdout
    return [p for p in found.splitlines() if "pgrep" not in p]


@pytest.fixture(scope="module")
def rack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Twin]:
    """A rack twin whose MIG server had one GPU turned back to a whole GPU before Slurm came up."""
    twin = Twin.up("rack", run_dir=tmp_path_factory.mktemp("slurmtwin"), timeout=60)
    pids = twin_pids(twin.run)
    try:
        node = twin.gpu_node("gpu004")
        for gi in node.gpu_instances(7):
            for ci in gi.compute_instances:
                node.destroy_compute_instance(7, gi.id, ci.id)
            node.destroy_gpu_instance(7, gi.id)
        node.set_mig(7, False)
        up = twin_cli("slurm", "up", "--run-dir", str(twin.run.path))
        assert "4/4 nodes idle" in up.stdout and f"export SLURM_CONF={twin.run.path}/slurm/slurm.conf" in up.stdout
        yield twin
    finally:
        twin_cli("slurm", "down", "--run-dir", str(twin.run.path), check=False)
        twin.down()
        assert_nothing_left(twin.run, sorted(set(pids + twin_pids(twin.run))))
        assert not slurm_processes(twin.run.path)


def test_slurm_up_without_a_twin_is_refused(tmp_path: Path) -> None:
    r = twin_cli("slurm", "up", "--run-dir", str(tmp_path), check=False)
    assert r.returncode == 2 and "no twin running" in r.stderr, r.stderr
    assert not (tmp_path / "slurm").exists()
    r = twin_cli("slurm", "up", "--slurmd-timeout", "0", "--run-dir", str(tmp_path), check=False)
    assert r.returncode == 2 and "--slurmd-timeout must be a whole number of seconds >= 1, not 0" in r.stderr
    assert not (tmp_path / "slurm").exists()


def all_idle(run_dir: Path) -> dict[str, tuple[str, str, str]]:
    """The nodes once every one is idle (a loaded machine may lag a little), or an assertion naming them."""
    last: dict[str, tuple[str, str, str]] = {}

    def idle() -> bool:
        nonlocal last
        last = nodes(run_dir)
        return {s for s, _, _ in last.values()} == {"idle"}

    try:
        wait_for(idle, 15, "every node idle")
    except AssertionError as e:
        raise AssertionError(f"{e}: {last}") from None
    return last


def test_every_node_idle_with_the_live_gres(rack: Twin) -> None:
    seen = all_idle(rack.run.path)
    assert sorted(seen) == ["gpu001", "gpu002", "gpu003", "gpu004"]
    for name in ("gpu001", "gpu002", "gpu003"):
        assert seen[name][1] == "gpu:h100:8"
    # gpu004 boots all-balanced MIG on 8 GPUs; GPU 7 was turned back to a whole GPU before `slurm up`.
    assert seen["gpu004"][1] == f"{MIG}1g.10gb:14,{MIG}2g.20gb:7,{MIG}3g.40gb:7,gpu:h100:1"
    env = twin_cli("slurm", "env", "--run-dir", str(rack.run.path)).stdout
    assert env.strip() == f"export SLURM_CONF={rack.run.path}/slurm/slurm.conf"


def test_srun_on_two_nodes(rack: Twin) -> None:
    out = slurm(rack.run.path, "srun", "-N2", "bash", "-c", "echo $SLURMD_NODENAME").split()
    assert len(out) == 2 and len(set(out)) == 2 and set(out) <= {"gpu001", "gpu002", "gpu003", "gpu004"}


def test_slurm_up_twice_is_refused(rack: Twin) -> None:
    r = twin_cli("slurm", "up", "--run-dir", str(rack.run.path), check=False)
    assert r.returncode == 2 and "already runs" in r.stderr, r.stderr
    all_idle(rack.run.path)


def test_twin_status_lists_the_slurm_daemon_and_the_supervisor_refuses_bad_requests(rack: Twin) -> None:
    run = rack.run
    doc = json.loads(twin_cli("status", "--json", "--run-dir", str(run.path)).stdout)
    row = next(d for d in doc["daemons"] if d["name"] == "slurm")
    assert (row["kind"], row["state"], row["health"], row["pid"]) == ("slurm", "running", "SERVING",
                                                                      lifecycle.running(run))
    before = run.daemons.read_text(), run.manifest.read_text()
    cfg, _ = lifecycle.daemon_config(run, 60, 0, SLURMD_TIMEOUT_S)
    refused = [
        ("daemon.start", cfg.to_dict(), "a daemon named 'slurm' is already in this twin"),
        ("daemon.start", cfg.to_dict() | {"name": "slurm2", "kind": "no_such_kind"}, "no installed service"),
        ("daemon.start", {"name": "x"}, "daemon.start needs a DaemonConfig"),
        ("daemon.stop", "gpu001", "gpu001 is part of the twin's plan"),
        ("daemon.stop", "no-such-daemon", "no daemon named 'no-such-daemon'"),
    ]
    for op, arg, message in refused:
        with pytest.raises(ControlError, match=re.escape(message)):
            control.call(run.control_socket, op, arg)
    with pytest.raises(ControlError, match="daemon.stop: too many positional arguments"):
        control.call(run.control_socket, "daemon.stop", "slurm", "extra")
    assert (run.daemons.read_text(), run.manifest.read_text()) == before


def test_fatal_xid_drains_the_node_and_the_twins_reboot_resumes_it(rack: Twin) -> None:
    run = rack.run.path
    rack.gpu_node("gpu002").inject_xid(gpu=3, xid=79)
    reason = "Xid 79 on GPU 3 (GPU has fallen off the bus)"
    wait_for(lambda: nodes(run)["gpu002"][0] == "drained", 15, "gpu002 drained by the health check")
    assert nodes(run)["gpu002"][2] == reason
    assert {n: s for n, (s, _, _) in nodes(run).items() if n != "gpu002"} == dict.fromkeys(
        ("gpu001", "gpu003", "gpu004"), "idle")
    # slurmd ran the program (its log names its parent), and the drain reached slurmctld.
    log = (run / "slurm" / "log" / "healthcheck-gpu002.log").read_text()
    assert re.search(rf"gpu002: drained: {re.escape(reason)} \(run by slurmd \d+\)", log), log
    assert f"node gpu002 reason set to: {reason}" in (run / "slurm" / "log" / "slurmctld.log").read_text()
    # Jobs avoid it.
    out = slurm(run, "srun", "-N3", "-p", "regression", "bash", "-c", "echo $SLURMD_NODENAME").split()
    assert sorted(out) == ["gpu001", "gpu003", "gpu004"]

    twin_cli("gpu", "reboot", "gpu002", "--run-dir", str(run))
    wait_for(lambda: nodes(run)["gpu002"][0] == "idle", 15, "gpu002 resumed after the reboot")
    assert "gpu002: resumed" in (run / "slurm" / "log" / "healthcheck-gpu002.log").read_text()


def test_slurm_down_leaves_nothing_and_twin_down_takes_slurm_with_it(rack: Twin) -> None:
    run = rack.run.path
    pid = lifecycle.running(rack.run)
    assert pid and slurm_processes(run)
    r = twin_cli("slurm", "down", "--run-dir", str(run))
    assert f"slurm daemon {pid}" in r.stdout
    assert not pid_alive(pid) and not slurm_processes(run), slurm_processes(run)
    status = twin_cli("slurm", "status", "--run-dir", str(run), check=False)
    assert status.returncode == 1 and "stopped" in status.stdout
    assert "no Slurm running" in twin_cli("slurm", "down", "--run-dir", str(run)).stdout

    # Up again; then stopping the twin stops its Slurm too (the daemon process follows its supervisor).
    twin_cli("slurm", "up", "--run-dir", str(run))
    pid = lifecycle.running(rack.run)
    assert pid and slurm_processes(run)
    rack.down()
    wait_for(lambda: not slurm_processes(run) and not pid_alive(pid), 15, "Slurm to stop with the twin")
