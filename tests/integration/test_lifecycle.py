"""`twin up` / `down` / `status` as a user runs them: real processes, real exit codes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from emulator import lifecycle, process
from emulator.client import Twin
from emulator.manifest import DaemonEntry, Manifest
from emulator.procutil import pid_alive
from emulator.rundir import RunDir, RunDirError
from emulator.topology import TopologyError
from tests.conftest import assert_nothing_left, twin_pids


def run_twin(twin_exe: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([twin_exe, *args], capture_output=True, text=True, timeout=timeout,
                          env=os.environ | {"COLUMNS": "200"})


def test_rack_twin_up_status_down_from_the_command_line(twin_exe: str, tmp_path: Path) -> None:
    run_dir = str(tmp_path / "rack")
    up = run_twin(twin_exe, "up", "rack", "--run-dir", run_dir)
    assert up.returncode == 0, up.stderr
    assert "4 daemons healthy" in up.stdout
    try:
        status = run_twin(twin_exe, "status", "--run-dir", run_dir, "--json")
        assert status.returncode == 0, status.stderr
        doc = json.loads(status.stdout)
        assert [d["health"] for d in doc["daemons"]] == ["SERVING"] * 4
        endpoints = Manifest.of(json.loads(run_twin(twin_exe, "endpoints", "--run-dir", run_dir, "--json").stdout))
        assert len(endpoints.daemons) == 4
        listing = run_twin(twin_exe, "gpu", "list", "--run-dir", run_dir, "--node", "gpu004", "--json")
        assert [g["index"] for g in json.loads(listing.stdout)] == list(range(8))
        again = run_twin(twin_exe, "up", "rack", "--run-dir", run_dir)
        assert again.returncode == 2 and "already running" in again.stderr
        assert "Traceback" not in again.stderr
        bad = run_twin(twin_exe, "fault", "inject", "gpu004", "--gpu", "2", "--xid", "12345", "--run-dir", run_dir)
        assert bad.returncode == 2 and "12345" in bad.stderr and "Traceback" not in bad.stderr
        unknown = run_twin(twin_exe, "gpu", "show", "gpu404", "0", "--run-dir", run_dir)
        assert unknown.returncode == 2 and "gpu404" in unknown.stderr
    finally:
        pids = twin_pids(RunDir(run_dir))
        down = run_twin(twin_exe, "down", "--run-dir", run_dir)
    assert down.returncode == 0 and "stopped" in down.stdout
    assert_nothing_left(RunDir(run_dir), pids)


def test_bad_topology_starts_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\nservers: [\n")
    run = RunDir(tmp_path / "run")
    with pytest.raises(TopologyError, match="bad.yaml"):
        lifecycle.up(str(bad), run)
    assert not run.manifest.exists() and run.running_supervisor() is None
    with pytest.raises(TopologyError, match="no-such-topology"):
        lifecycle.up("no-such-topology", run)


def test_commands_on_a_directory_without_a_twin_say_so(twin_exe: str, tmp_path: Path) -> None:
    result = run_twin(twin_exe, "status", "--run-dir", str(tmp_path))
    assert result.returncode == 2 and "not found" in result.stderr and "Traceback" not in result.stderr
    with pytest.raises(RunDirError):
        Twin.connect(tmp_path)
    assert "no twin running" in run_twin(twin_exe, "down", "--run-dir", str(tmp_path)).stdout


def test_unknown_network_backend_and_bad_broker_url_are_refused(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    with pytest.raises(lifecycle.TwinError, match="unknown network backend"):
        lifecycle.up("mini", run, network="carrier-pigeon")
    with pytest.raises(lifecycle.TwinError, match="mqtt://HOST:PORT"):
        lifecycle.up("mini", run, broker_url="http://x")
    for bad in ({"twin": "x"}, {"services": ("ceph",)}, {"clock_epoch": 1.0}, {"cepth": True}):
        with pytest.raises(lifecycle.TwinError, match=f"unknown option\\(s\\) {next(iter(bad))}"):
            lifecycle.up("mini", run, **bad)   # an option built from others, or a misspelt flag
    assert not run.manifest.exists()


def test_killed_supervisor_takes_its_daemons_with_it(tmp_path: Path) -> None:
    twin = Twin.up("mini", run_dir=tmp_path / "crash", timeout=60)
    pids = twin_pids(twin.run)
    supervisor = twin.run.running_supervisor()
    assert supervisor and len(pids) == 4   # supervisor, broker, two daemons
    status = json.loads(twin.run.daemons.read_text())   # each pid beside its start time
    assert status["broker_start"] == process.start_time(status["broker_pid"])
    assert all(d["start"] == process.start_time(d["pid"]) for d in status["daemons"].values())
    os.kill(supervisor, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while any(pid_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    twin.down()   # cleans whatever a crash left, and the pid file
    assert_nothing_left(twin.run, pids)


def test_two_twins_run_side_by_side(tmp_path: Path) -> None:
    with Twin.up("mini", run_dir=tmp_path / "a", timeout=60) as a, Twin.up("mini", run_dir=tmp_path / "b",
                                                                          timeout=60) as b:
        assert a.manifest.slot != b.manifest.slot
        assert a.gpu_node("gpu001").gpus()[0].uuid == b.gpu_node("gpu001").gpus()[0].uuid
        a.gpu_node("gpu001").lease("only-in-a", count=1)
        assert not b.gpu_node("gpu001").leases()


def test_up_stops_waiting_for_a_daemon_the_supervisor_gave_up_on(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    run.create()
    (run.logs / "gpu001.log").write_text("starting\nOSError: [Errno 98] address already in use\n")
    run.daemons.write_text(json.dumps({"daemons": {"gpu001": {"state": "failed", "pid": 0},
                                                   "gpu002": {"state": "running", "pid": 0}}}))
    daemons = [DaemonEntry(name=n, kind="gpu_node", host=n, grpc=grpc, addresses={})
               for n, grpc in (("gpu001", "127.0.0.1:9"), ("gpu002", "127.0.0.1:19"))]
    started = time.monotonic()
    with pytest.raises(lifecycle.TwinError, match=r"gpu001 kept crashing at start-up: OSError: \[Errno 98\]"):
        lifecycle.wait_healthy(run, daemons, time.monotonic() + 60, lambda *_: None)
    assert time.monotonic() - started < 60   # it gave up at once, not at the deadline


# A process that looks like a twin's (another twin's daemon, say) and has been given a pid this run dir recorded.
IMPOSTOR = ["python3", "-c", "import sys; sys.path.insert(0, sys.argv[1]); from emulator.procutil import "
            "set_process_name; set_process_name('twin:gpu001'); print('ready', flush=True); import time; "
            "time.sleep(300)", str(Path(__file__).resolve().parents[2]), "emulator.supervisor"]


def test_down_leaves_a_recorded_pid_that_the_kernel_gave_to_another_process(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    run.create()
    proc = subprocess.Popen(IMPOSTOR, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        wrong = process.start_time(proc.pid) - 1   # the process that had this pid started earlier
        run.supervisor_pid.write_text(f"{proc.pid}\n")
        run.supervisor_start.write_text(f"{wrong}\n")
        run.daemons.write_text(json.dumps({"broker_pid": proc.pid, "broker_start": wrong,
                                           "daemons": {"gpu001": {"pid": proc.pid, "start": wrong}}}))
        assert run.running_supervisor() is None
        assert lifecycle.down(run) == []
        assert proc.poll() is None   # not signalled
        run.daemons.write_text(json.dumps({"daemons": {"gpu001": {"pid": proc.pid,
                                                                  "start": process.start_time(proc.pid)}}}))
        assert lifecycle.down(run) == [f"leftover {proc.pid}"]   # the recorded process itself is stopped
        assert proc.wait(5) is not None
    finally:
        proc.kill()
        proc.wait()


# -- emulator.process: how every teardown stops what it recorded --------------------------------

IGNORES_TERM = ["python3", "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                "print('ready', flush=True); time.sleep(300)"]


def test_stop_process_kills_what_ignores_sigterm_after_the_grace_and_reaps_it() -> None:
    proc = subprocess.Popen(IGNORES_TERM, stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"   # its SIGTERM handler is in place
    assert process.stop_process(proc.pid, 0.3)
    assert not pid_alive(proc.pid)
    with pytest.raises(ChildProcessError):
        os.waitpid(proc.pid, os.WNOHANG)   # reaped: no zombie left
    assert not process.stop_process(proc.pid, 0.3)   # nothing to stop a second time


def test_stop_process_leaves_a_pid_that_is_not_the_recorded_process() -> None:
    proc = subprocess.Popen(["sleep", "300"])
    try:
        rec = process.record(proc.pid)
        assert process.same_process(rec["pid"], rec["start"])
        assert not process.stop_process(proc.pid, 0.1, start=rec["start"] + 1)   # as if the pid was reused
        assert proc.poll() is None
        assert process.stop_process(proc.pid, 1.0, start=rec["start"])
        assert proc.wait(5) is not None
    finally:
        proc.kill()
        proc.wait()


def test_a_stopped_process_gets_to_handle_sigterm(tmp_path: Path) -> None:
    said = tmp_path / "said"
    proc = subprocess.Popen(["python3", "-c", "import pathlib, signal, sys, time\n"
                             "def bye(*_):\n    pathlib.Path(sys.argv[1]).write_text('SIGTERM')\n    sys.exit(0)\n"
                             "signal.signal(signal.SIGTERM, bye)\nprint('ready', flush=True)\ntime.sleep(300)",
                             str(said)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    os.kill(proc.pid, signal.SIGSTOP)
    assert process.stop_process(proc.pid, 60)   # SIGCONT after SIGTERM, or it would wait for the SIGKILL
    assert said.read_text() == "SIGTERM"


@pytest.mark.skipif(process.cgroup2_mount() is None, reason="no writable cgroup v2 hierarchy")
def test_a_cgroup_holds_what_its_processes_spawn_in_new_sessions(tmp_path: Path) -> None:
    cgroup = process.Cgroup.create(f"test-{os.getpid()}")
    assert cgroup is not None
    pid_file = tmp_path / "grandchild"
    try:
        # The child starts a grandchild in a session of its own and exits (as slurmd's slurmstepd).
        subprocess.run(cgroup.wrap(["sh", "-c", f"setsid sleep 300 & echo $! > {pid_file}"]), check=True,
                       timeout=10)
        grandchild = int(pid_file.read_text())
        assert pid_alive(grandchild) and cgroup.pids() == [grandchild]
        cgroup.save(tmp_path / "cgroup")
        again = process.Cgroup.load(tmp_path / "cgroup")
        assert again is not None and again.kill() == [grandchild]
        assert not pid_alive(grandchild) and not again.pids()
    finally:
        cgroup.kill()
        cgroup.remove()
    assert not cgroup.path.exists()


@pytest.mark.skipif(process.cgroup2_mount() is None, reason="no writable cgroup v2 hierarchy")
def test_a_cgroup_ends_a_services_stragglers_but_keeps_its_daemons() -> None:
    # Slurm's stop ends leftover job steps first, so a slurmstepd cannot hold its slurmd's SIGTERM.
    cgroup = process.Cgroup.create(f"test-keep-{os.getpid()}")
    assert cgroup is not None
    daemon = subprocess.Popen(cgroup.wrap(["sleep", "300"]))
    step = subprocess.Popen(cgroup.wrap(["sleep", "300"]))
    try:
        end = time.monotonic() + 10
        while sorted(cgroup.pids()) != sorted([daemon.pid, step.pid]) and time.monotonic() < end:
            time.sleep(0.02)
        assert cgroup.kill_except([daemon.pid]) == [step.pid]
        assert not pid_alive(step.pid)   # killed and reaped
        assert pid_alive(daemon.pid) and cgroup.pids() == [daemon.pid]
    finally:
        cgroup.kill()
        daemon.wait(10)
        step.wait(10)
        cgroup.remove()
