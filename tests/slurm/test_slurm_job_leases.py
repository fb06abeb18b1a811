"""Slurm jobs hold twin leases on a `--network netns` twin (services/slurm/job_leases.py): slurmd's
Prolog leases the GPUs (and MIG slices) Slurm gave a job to `slurm-<jobid>` on each node, so the
node's daemon shows them in use and NVML inside the job lists the job's process on exactly those
GPUs (the batch script's pid, which the TaskProlog gave the lease); the Epilog releases them when
the job ends, and when it is cancelled; a GPU the twin had leased to someone else does not stop the
job; the Slurm daemon's sweep releases a `slurm-` lease of a job Slurm does not run (slurmd killed)."""

from __future__ import annotations

import json
import os
import re
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from emulator.client import Twin
from services.gpu_node.nvml_endpoint import LIB_DIR
from services.slurm.lease_sweep import SWEEP_INTERVAL_S
from tests.conftest import netns_lock, netns_skip_reason
from tests.slurm.conftest import REASON as SLURM_REASON
from tests.slurm.conftest import wait_for
from tests.slurm.test_slurm_netns import slurm
from tests.slurm.test_slurm_twin import slurm_processes, twin_cli

SLURMD_TIMEOUT_S = 20   # `twin slurm up --slurmd-timeout`: Slurm's default is 300, the twin's 60

# Each GPU NVML shows the job (host minor number → the pids of its running compute processes)
QUERY = """
import json, pynvml as n
n.nvmlInit()
print(json.dumps({n.nvmlDeviceGetMinorNumber(h): [p.pid for p in n.nvmlDeviceGetComputeRunningProcesses(h)]
                  for h in map(n.nvmlDeviceGetHandleByIndex, range(n.nvmlDeviceGetCount()))}))
"""
# Each GPU a MIG job sees: its MIG devices' UUIDs and the pids of its running compute processes
QUERY_MIG = """
import json, pynvml as n
n.nvmlInit()
out = {}
for h in map(n.nvmlDeviceGetHandleByIndex, range(n.nvmlDeviceGetCount())):
    migs = []
    for i in range(n.nvmlDeviceGetMaxMigDeviceCount(h)):
        try:
            migs.append(n.nvmlDeviceGetUUID(n.nvmlDeviceGetMigDeviceHandleByIndex(h, i)))
        except n.NVMLError:
            pass
    pids = [p.pid for p in n.nvmlDeviceGetComputeRunningProcesses(h)]
    out[n.nvmlDeviceGetMinorNumber(h)] = {"mig": migs, "pids": pids}
print(json.dumps(out))
"""
MIG_3G = "gpu:nvidia_h100_80gb_hbm3_3g.40gb"


@pytest.fixture(scope="module")
def twin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Twin]]:
    """A rack twin on `--network netns` with `twin slurm up` (as test_slurm_netns's); `twin down` at the
    end must leave no Slurm process behind."""
    with netns_lock():   # one namespace twin per machine
        if reason := SLURM_REASON or netns_skip_reason("Slurm on --network netns"):
            pytest.skip(reason)
        run_dir = tmp_path_factory.mktemp("slurm-leases")
        twin_cli("up", "rack", "--network", "netns", "--run-dir", str(run_dir), timeout=60)
        try:
            # a node is DOWN 20 s after its slurmd stops answering (the test of a killed slurmd waits for it)
            twin_cli("slurm", "up", "--slurmd-timeout", str(SLURMD_TIMEOUT_S), "--run-dir", str(run_dir), timeout=60)
            yield run_dir, Twin.connect(run_dir)
        finally:
            twin_cli("down", "--run-dir", str(run_dir), check=False, timeout=60)
        assert not slurm_processes(run_dir), "twin down left Slurm processes behind"


def job_leases(client: Twin, node: str, job: str) -> list:
    return [ls for ls in client.gpu_node(node).leases() if ls.job_id == f"slurm-{job}"]


def job_gpus(run_dir: Path, job: str) -> list[int]:
    """The GRES indexes Slurm gave `job` on its (one) node: `scontrol show job -d`'s IDX."""
    (idx,) = re.findall(r"GRES=\S+\(IDX:([^)]*)\)", slurm(run_dir, "scontrol", "show", "job", "-d", job))
    return [i for part in idx.split(",") for i in range(int(part.split("-")[0]), int(part.split("-")[-1]) + 1)]


def log_lines(run_dir: Path, node: str, job: str) -> list[str]:
    path = run_dir / "slurm" / "log" / f"job-leases-{node}.log"
    return [x for x in path.read_text().splitlines() if f" job {job} " in x] if path.exists() else []


def submit(run_dir: Path, tmp_path: Path, *args: str, wrap: str) -> str:
    env_args = f"--export=ALL,LD_LIBRARY_PATH={LIB_DIR},CLUSTERTWIN_NVML_TTL_MS=0"
    return slurm(run_dir, "sbatch", "--parsable", f"--chdir={tmp_path}", env_args, *args, "--wrap", wrap).strip()


def test_a_gpu_job_holds_its_gpus_while_it_runs_and_its_epilog_releases_them(
        twin: tuple[Path, Twin], tmp_path: Path) -> None:
    run_dir, client = twin
    node = "gpu002"
    (tmp_path / "q.py").write_text(QUERY)
    py = sys.executable
    job = submit(run_dir, tmp_path, "-p", "regression", "-w", node, "--gres=gpu:2", wrap=(
        f"echo $$ > batch.pid; {py} q.py > visible.json && env -u CUDA_VISIBLE_DEVICES {py} q.py > all.json; "
        "while [ ! -e release ]; do sleep 0.2; done"))
    wait_for(lambda: (tmp_path / "all.json").exists() and (tmp_path / "all.json").read_text().strip(), 60,
             f"job {job}'s NVML query")
    gpus = job_gpus(run_dir, job)
    assert len(gpus) == 2
    (lease,) = job_leases(client, node, job)   # one lease on the node for the job, on its two GPUs
    assert sorted(d.gpu for d in lease.devices) == gpus and not any(d.is_mig for d in lease.devices)
    for g in client.gpu_node(node).gpus():   # the daemon: busy where Slurm put the job, idle elsewhere
        assert list(g.lease_ids) == ([lease.id] if g.index in gpus else []), g.index
        assert (g.gpu_util > 0) == (g.index in gpus) and (g.memory_used_mib > 0) == (g.index in gpus)
    every = {int(k): v for k, v in json.loads((tmp_path / "all.json").read_text()).items()}
    assert len(every) == 8
    busy = {k: v for k, v in every.items() if v}
    assert sorted(busy) == gpus, every   # processes on exactly the job's GPUs
    # ... and that process is the job's: the batch script, whose pid the TaskProlog gave the lease
    batch = int((tmp_path / "batch.pid").read_text())
    assert all(v == [batch] for v in busy.values()) and lease.pid == batch, (busy, lease.pid, batch)
    visible = {int(k): v for k, v in json.loads((tmp_path / "visible.json").read_text()).items()}
    assert visible == busy   # the job's own view (Slurm's CUDA_VISIBLE_DEVICES): its GPUs, its process
    (tmp_path / "release").touch()
    wait_for(lambda: not job_leases(client, node, job), 30, f"job {job}'s leases to end")
    wait_for(lambda: "JobState=COMPLETED" in slurm(run_dir, "scontrol", "show", "job", job), 30,
             f"job {job} to complete")   # the Epilog runs while the job is COMPLETING
    assert any(f"released {lease.id} " in x and x.split()[1] == "epilog" for x in log_lines(run_dir, node, job))
    assert not any(g.lease_ids for g in client.gpu_node(node).gpus())


def test_scancel_releases_the_jobs_leases(twin: tuple[Path, Twin], tmp_path: Path) -> None:
    run_dir, client = twin
    node = "gpu001"
    job = submit(run_dir, tmp_path, "-p", "regression", "-w", node, "--gres=gpu:h100:3", wrap="sleep 300")
    wait_for(lambda: job_leases(client, node, job), 60, f"job {job}'s lease")
    (lease,) = job_leases(client, node, job)
    assert sorted(d.gpu for d in lease.devices) == job_gpus(run_dir, job)
    slurm(run_dir, "scancel", job)
    wait_for(lambda: not job_leases(client, node, job), 30, f"cancelled job {job}'s leases to end")
    assert client.gpu_node(node).lease_info(lease.id).end_reason == "released"
    assert any(x.split()[1] == "epilog" and "released" in x for x in log_lines(run_dir, node, job))


def test_a_mig_job_holds_its_slices_and_sees_only_them(twin: tuple[Path, Twin], tmp_path: Path) -> None:
    """gpu004 is the rack's MIG server: a job given two 3g.40gb slices holds two MIG devices of that
    profile (which instance of the profile is the twin's pick, see job_leases.py), and its
    CUDA_VISIBLE_DEVICES names those two by MIG UUID, as slurmd sets it from NVML autodetection: NVML
    in the job shows their GPUs with only those MIG devices, and the job's process on them."""
    run_dir, client = twin
    node = "gpu004"
    (tmp_path / "q.py").write_text(QUERY_MIG)
    job = submit(run_dir, tmp_path, "-p", "dev", "-w", node, f"--gres={MIG_3G}:2",
                 wrap=f"echo $$ > batch.pid; echo $CUDA_VISIBLE_DEVICES > cvd; {sys.executable} q.py > visible.json; "
                      "sleep 300")
    wait_for(lambda: sum(len(ls.devices) for ls in job_leases(client, node, job)) == 2, 60,
             f"job {job}'s two slices leased")
    devices = [d for ls in job_leases(client, node, job) for d in ls.devices]
    assert all(d.is_mig and d.mig_profile == "3g.40gb" for d in devices), devices
    wait_for(lambda: (tmp_path / "visible.json").exists() and (tmp_path / "visible.json").read_text(), 60,
             f"job {job}'s NVML query")
    assert min(job_gpus(run_dir, job)) >= 24   # Slurm's GRES indexes of 3g.40gb units on gpu004: 24-31
    held = sorted(devices, key=lambda d: (d.gpu, d.gi_id, d.ci_id))
    assert (tmp_path / "cvd").read_text().strip().split(",") == [d.uuid for d in held]
    pid = int((tmp_path / "batch.pid").read_text())
    visible = json.loads((tmp_path / "visible.json").read_text())
    assert {int(g): sorted(v["mig"]) for g, v in visible.items()} == {
        g: sorted(d.uuid for d in held if d.gpu == g) for g in {d.gpu for d in held}}
    assert all(v["pids"] and set(v["pids"]) == {pid} for v in visible.values()), visible
    slurm(run_dir, "scancel", job)
    wait_for(lambda: not job_leases(client, node, job), 30, f"cancelled job {job}'s slices released")


def test_a_gpu_leased_to_someone_else_is_logged_and_the_job_runs(
        twin: tuple[Path, Twin], tmp_path: Path) -> None:
    """Slurm owns the node's allocation: the job runs on all 8 GPUs; its lease has the 7 the twin had
    free, and the conflict is in the log, naming the other holder."""
    run_dir, client = twin
    node = "gpu003"
    other = client.gpu_node(node).lease("not-slurm", gpus=[0])
    try:
        job = submit(run_dir, tmp_path, "-p", "regression", "-w", node, "--gres=gpu:8", wrap="sleep 300")
        wait_for(lambda: job_leases(client, node, job), 60, f"job {job}'s lease")
        (lease,) = job_leases(client, node, job)
        assert sorted(d.gpu for d in lease.devices) == list(range(1, 8))
        assert "JobState=RUNNING" in slurm(run_dir, "scontrol", "show", "job", job)
        (line,) = [x for x in log_lines(run_dir, node, job) if "CONFLICT" in x]
        assert f"GPU 0, which the twin has leased to lease {other.id} (job not-slurm)" in line
        slurm(run_dir, "scancel", job)
        wait_for(lambda: not job_leases(client, node, job), 30, f"cancelled job {job}'s leases to end")
    finally:
        client.gpu_node(node).release(other.id)


def test_a_lease_of_a_job_slurm_does_not_run_is_swept(twin: tuple[Path, Twin]) -> None:
    """What a killed slurmd's Epilog would have released: the Slurm daemon's sweep does it."""
    _, client = twin
    stale = client.gpu_node("gpu001").lease("slurm-999999", count=1)
    wait_for(lambda: not client.gpu_node("gpu001").lease_info(stale.id).active, SWEEP_INTERVAL_S + 15,
             "the sweep to release the stale lease")
    assert client.gpu_node("gpu001").lease_info(stale.id).end_reason == "released"


def test_a_killed_slurmds_job_lease_is_released_once_slurm_gives_up_the_node(
        twin: tuple[Path, Twin], tmp_path: Path) -> None:
    """slurmd killed under a running job: no Epilog runs there. slurmctld marks the node DOWN after
    SlurmdTimeout and requeues the job (it stays pending: it asked for that node), and the Slurm
    daemon's sweep then releases the lease. Last in this module: the node stays down."""
    run_dir, client = twin
    node = "gpu003"
    job = submit(run_dir, tmp_path, "-p", "regression", "-w", node, "--requeue", "--gres=gpu:4", wrap="sleep 600")
    wait_for(lambda: job_leases(client, node, job), 60, f"job {job}'s lease")
    (lease,) = job_leases(client, node, job)
    config = slurm(run_dir, "scontrol", "show", "config")
    assert re.search(rf"^SlurmdTimeout\s*=\s*{SLURMD_TIMEOUT_S} sec$", config, re.M), config
    pid = json.loads((run_dir / "slurm" / "state.json").read_text())["pids"][f"slurmd-{node}"]
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not client.gpu_node(node).lease_info(lease.id).active,
             SLURMD_TIMEOUT_S + 30 + SWEEP_INTERVAL_S + 30,
             f"job {job}'s lease on {node} (slurmd killed) to be released")
    state = slurm(run_dir, "scontrol", "show", "job", job)
    assert "JobState=RUNNING" not in state, state
    assert not any(x.split()[1] == "epilog" for x in log_lines(run_dir, node, job))   # the sweep did it
    slurm(run_dir, "scancel", job)
