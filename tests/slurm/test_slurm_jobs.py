"""The training batch scripts (pure: no daemons): the shipped file is what the renderer gives, bash
accepts it and the --real one, bad input is refused, and a drill refuses Slurm-only faults without the
Slurm backend. The --real script running: tests/slurm/test_slurm_netns.py."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from services.slurm import jobs
from workloads.drill.spec import DrillError, parse

ROOT = Path(__file__).resolve().parents[2]


def test_shipped_script_is_the_rendered_one_and_valid_bash(tmp_path: Path) -> None:
    shipped = (ROOT / "topologies" / "jobs" / "train.sbatch").read_text()
    assert shipped == jobs.shipped_script()
    custom = tmp_path / "t.sbatch"
    custom.write_text(jobs.train_script(nodes=2, partition="regression", run_dir="/run/twin",
                                        train_args=["--steps", "9"]))
    for script in (ROOT / "topologies" / "jobs" / "train.sbatch", custom):
        subprocess.run(["bash", "-n", str(script)], check=True)
    text = custom.read_text()
    for needle in ("#SBATCH --nodes=2", "#SBATCH --partition=regression", "#SBATCH --gres=gpu:h100:8",
                   "#SBATCH --requeue", 'scontrol show hostnames "$SLURM_JOB_NODELIST"', "--steps 9",
                   "TWIN_RUN_DIR=${TWIN_RUN_DIR:-/run/twin}", "--resume", "scontrol requeue"):
        assert needle in text, needle


def test_real_script_is_valid_bash_and_bad_input_is_refused(tmp_path: Path) -> None:
    import sys

    twin = str(Path(sys.executable).with_name("twin"))
    out = tmp_path / "real.sbatch"
    r = subprocess.run([twin, "slurm", "train-script", "--real", "-N", "3", "--gpus-per-node", "4", "--steps", "9",
                        "--run-dir", str(tmp_path), "-o", str(out)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    subprocess.run(["bash", "-n", str(out)], check=True)
    text = out.read_text()
    for needle in ("#SBATCH --nodes=3", "#SBATCH --gres=gpu:h100:4", "#SBATCH --requeue", "-m torch.distributed.run",
                   "-m workloads.train.real_worker", "--steps 9", f"{tmp_path}/checkpoints/", "scontrol requeue",
                   "native/nvml/build"):
        assert needle in text, needle
    bad = subprocess.run([twin, "slurm", "train-script", "--real", "--gpus-per-node", "9", "--run-dir", str(tmp_path),
                          "-o", str(tmp_path / "bad.sbatch")], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "--gpus-per-node must be 1..8" in bad.stderr
    assert not (tmp_path / "bad.sbatch").exists()


def test_preempt_fault_needs_the_slurm_backend() -> None:
    doc = {"name": "p", "topology": "rack", "workload": {"gpus": 32, "steps": 10},
           "schedule": [{"name": "reg", "at": {"step": 5}, "fault": "preempt"}], "expect": []}
    with pytest.raises(DrillError, match="preemption needs"):
        parse(doc)
    assert parse({**doc, "workload": {**doc["workload"], "scheduler": "slurm"}}).backend == "slurm"
    with pytest.raises(DrillError, match="workload.scheduler"):
        parse({**doc, "workload": {**doc["workload"], "scheduler": "pbs"}})
