"""`twin train` as Slurm jobs on a `rack` twin (4 nodes × 8 H100), with the real daemons and the
batch script `twin slurm train-script` renders: preemption by requeue and resume from the
checkpoint, gang scheduling, and a burst of array jobs beside a long training job."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from emulator.client import Twin
from services.slurm import jobs, lifecycle
from tests.conftest import assert_nothing_left, twin_pids
from tests.slurm.conftest import needs_slurm, wait_for
from workloads.train import checkpoint_store

pytestmark = needs_slurm

TWIN = str(Path(sys.executable).parent / "twin")
ARRAY = int(os.environ.get("TWIN_TEST_ARRAY", "1000"))  # the burst; smaller for a quick local run


class Cluster:
    def __init__(self, twin: Twin, work: Path) -> None:
        self.twin, self.work = twin, work
        self.env = dict(os.environ, SLURM_CONF=str(lifecycle.conf_path(twin.run)))

    def run(self, *argv: str, timeout: float = 30) -> str:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=self.work, env=self.env)
        assert r.returncode == 0, f"{' '.join(argv)}: {r.returncode}\n{r.stdout}\n{r.stderr}"
        return r.stdout

    def sbatch(self, *argv: str) -> str:
        return self.run("sbatch", "--parsable", *argv).strip().split(";")[0]

    def train(self, name: str, *, nodes: int = 4, partition: str = "exploratory", steps: int = 40,
              every: int = 5, extra: tuple[str, ...] = ()) -> str:
        script = self.work / f"{name}.sbatch"
        script.write_text(jobs.train_script(
            nodes=nodes, partition=partition, job_name=name, twin=TWIN, run_dir=self.twin.run.path,
            ckpt_root=self.work / "ckpt", train_args=["--params", "70e9", "--steps", str(steps),
                                                      "--checkpoint-every", str(every), "--time-scale", "1000"]))
        return self.sbatch(*extra, str(script))

    def ckdir(self, name: str, job: str) -> Path:
        return self.work / "ckpt" / f"{name}-{job}"

    def attempt(self, name: str, job: str, n: int) -> dict:
        path = self.ckdir(name, job) / "attempts" / f"{n}.json"
        return json.loads(path.read_text()) if path.exists() else {}

    def jobs(self) -> dict[str, tuple[str, str, str, str]]:
        """Job (array tasks expanded) → (partition, state, reason, nodes)."""
        rows = self.run("squeue", "-h", "-r", "-o", "%i|%P|%T|%r|%N").splitlines()
        return {i: (p, s, r, n) for i, p, s, r, n in (row.split("|") for row in rows)}

    def show(self, job: str) -> dict[str, str]:
        out = self.run("scontrol", "show", "job", "-o", job)
        return dict(kv.split("=", 1) for kv in out.split() if "=" in kv)

    def leases(self, job_id: str) -> dict[str, float]:
        """Server → creation time (twin clock) of the active leases of `job_id`."""
        return {s: lease.created_at for s in self.twin.gpu_nodes
                for lease in self.twin.gpu_node(s).leases() if lease.job_id == job_id}

    def idle(self) -> None:
        self.run("scancel", "--full", "-u", "root")
        wait_for(lambda: not self.jobs(), 30, "the queue to empty")
        wait_for(lambda: set(lifecycle.status(self.twin.run)["nodes"][n]["state"] for n in self.twin.gpu_nodes)
                 == {"idle"}, 30, "every node idle")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A rack twin whose MIG server was turned to whole GPUs, so that every node offers gpu:h100:8."""
    base = tmp_path_factory.mktemp("slurmtrain")
    twin = Twin.up("rack", run_dir=base / "twin", timeout=60)
    pids = twin_pids(twin.run)
    try:
        node = twin.gpu_node("gpu004")
        for g in node.gpus():
            for gi in node.gpu_instances(g.index):
                for ci in gi.compute_instances:
                    node.destroy_compute_instance(g.index, gi.id, ci.id)
                node.destroy_gpu_instance(g.index, gi.id)
            node.set_mig(g.index, False)
        lifecycle.up(twin.run, timeout=60)
        (base / "work").mkdir()
        yield Cluster(twin, base / "work")
    finally:
        lifecycle.down(twin.run)
        twin.down()
        assert_nothing_left(twin.run, sorted(set(pids + twin_pids(twin.run))))


@pytest.fixture
def c(cluster: Cluster) -> Iterator[Cluster]:
    yield cluster
    cluster.idle()


def test_regression_preempts_exploratory_training_which_resumes_from_its_checkpoint(c: Cluster) -> None:
    explo = c.train("explo", steps=40, every=5)
    ck = c.ckdir("explo", explo)
    wait_for(lambda: checkpoint_store.latest(ck), 30, "the exploratory job's first checkpoint")
    assert set(c.leases(f"slurm-{explo}")) == set(c.twin.gpu_nodes)
    reg = c.sbatch("-p", "regression", "-N4", "--gres=gpu:h100:8", "-J", "regression", "--wrap", "sleep 2")
    # Slurm preempts by requeue: the training is terminated, its leases released, the regression job runs.
    first = wait_for(lambda: c.attempt("explo", explo, 0), 20, "the exploratory job's first attempt to end")
    assert first["status"] == "terminated" and "SIGTERM" in first["reason"], first
    wait_for(lambda: c.jobs().get(reg, ("", "", "", ""))[1] in ("RUNNING", "COMPLETING") or
             reg not in c.jobs(), 20, "the regression job to run")
    assert c.show(explo)["Restarts"] == "1"
    kept = [s for s in first["checkpoints"] if s <= first["last_step"]]
    assert kept and first["last_step"] >= kept[-1]
    # Requeued, it starts again (after the regression job and Slurm's requeue delay) and resumes.
    second = wait_for(lambda: c.attempt("explo", explo, 1), 60, "the exploratory job to resume and complete")
    assert second["status"] == "completed", second
    assert second["resumed_from"] == kept[-1] and second["first_step"] == kept[-1] + 1
    assert second["last_step"] == 40
    # No checkpoint lost: every one the first attempt wrote is still complete, and the second continued.
    good, bad = checkpoint_store.scan(ck)
    assert not bad and {s for s in kept} <= {g.step for g in good} and good[-1].step == 40
    log = next(c.work.glob(f"slurm-explo-{explo}.out")).read_text()
    assert "DUE TO PREEMPTION" in log and f"resumed from checkpoint step {kept[-1]}" in log, log
    assert not c.leases(f"slurm-{explo}")


def test_gang_job_waits_taking_nothing_then_starts_on_every_node_at_once(c: Cluster) -> None:
    blocker = c.sbatch("-w", "gpu002", "--gres=gpu:h100:8", "-J", "blocker", "--wrap", "sleep 300")
    wait_for(lambda: c.jobs().get(blocker, ("", ""))[1] == "RUNNING", 20, "the blocker to run on gpu002")
    gang = c.train("gang", nodes=4, steps=10, every=5)
    wait_for(lambda: c.jobs()[gang][2] == "Resources", 20, "the gang job to wait for resources")
    time.sleep(3)  # a few scheduling cycles (sched_interval=2): it still waits, holding nothing
    part, state, reason, nodes = c.jobs()[gang]
    assert (state, reason, nodes) == ("PENDING", "Resources", ""), c.jobs()[gang]
    st = lifecycle.status(c.twin.run)["nodes"]
    assert {n: st[n]["state"] for n in ("gpu001", "gpu003", "gpu004")} == dict.fromkeys(
        ("gpu001", "gpu003", "gpu004"), "idle")
    assert not c.leases(f"slurm-{gang}") and not (c.ckdir("gang", gang) / "attempts").exists()
    c.run("scancel", blocker)
    wait_for(lambda: c.jobs().get(gang, ("", ""))[1] == "RUNNING", 30, "the gang job to start")
    info = c.show(gang)
    assert info["NodeList"] == "gpu[001-004]" and info["NumNodes"] == "4", info
    # One start for every node: the job's StartTime, and its leases all taken within one launch.
    leases = wait_for(lambda: (lambda got: got if len(got) == 4 else None)(c.leases(f"slurm-{gang}")), 30,
                      "the gang job's leases")
    assert max(leases.values()) - min(leases.values()) < 2.0, leases
    done = wait_for(lambda: c.attempt("gang", gang, 0), 60, "the gang job to complete")
    assert done["status"] == "completed" and sorted(done["servers"]) == sorted(c.twin.gpu_nodes)


def test_array_burst_beside_long_training_both_progress_and_priorities_hold(c: Cluster) -> None:
    train = c.train("long", nodes=4, steps=5000, every=10)
    ck = c.ckdir("long", train)
    wait_for(lambda: checkpoint_store.latest(ck), 30, "the training job's first checkpoint")
    marks = c.work / "array"
    marks.mkdir()
    t0 = time.monotonic()
    array = c.sbatch(f"--array=1-{ARRAY}", "-J", "sim", "-o", "/dev/null", "--wrap",
                     f"touch {marks}/$SLURM_ARRAY_TASK_ID")
    reg = c.sbatch("-p", "regression", "-N1", "-J", "regression", "-o", "/dev/null", "--wrap", "true")
    step_at_burst = checkpoint_store.latest(ck).step
    # Priorities hold: the regression job, submitted after the burst, runs while array tasks
    # submitted before it still wait.
    pending_when_reg_ran = None
    while pending_when_reg_ran is None and time.monotonic() - t0 < 60:
        q = c.jobs()
        if q.get(reg, ("", "PENDING"))[1] != "PENDING":
            pending_when_reg_ran = sum(1 for i, (p, s, _, _) in q.items() if i.startswith(f"{array}_")
                                       and s == "PENDING")
        time.sleep(0.1)
    assert pending_when_reg_ran is not None, "the regression job never ran"
    assert pending_when_reg_ran > 0, "every array task had started before the regression job"
    # Both progress: every array task ran while the training kept stepping and checkpointing.
    wait_for(lambda: not any(i.startswith(f"{array}_") for i in c.jobs()), 120, "the array burst to finish")
    burst_s = time.monotonic() - t0
    assert len(list(marks.iterdir())) == ARRAY
    assert c.jobs()[train][1] == "RUNNING" and c.show(train)["Restarts"] == "0"
    step_after = checkpoint_store.latest(ck).step
    assert step_after > step_at_burst, (step_at_burst, step_after)
    print(f"\n{ARRAY} array tasks in {burst_s:.1f} s wall beside training (steps {step_at_burst} -> {step_after}); "
          f"{pending_when_reg_ran} array tasks still pending when the regression job started")
