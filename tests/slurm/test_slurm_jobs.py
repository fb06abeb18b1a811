"""The training batch script (pure: no daemons): the shipped file is what the renderer gives, bash
accepts it, and a drill refuses Slurm-only faults without the Slurm backend."""

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


def test_preempt_fault_needs_the_slurm_backend() -> None:
    doc = {"name": "p", "topology": "rack", "workload": {"gpus": 32, "steps": 10},
           "schedule": [{"name": "reg", "at": {"step": 5}, "fault": "preempt"}], "expect": []}
    with pytest.raises(DrillError, match="preemption needs"):
        parse(doc)
    assert parse({**doc, "workload": {**doc["workload"], "scheduler": "slurm"}}).backend == "slurm"
    with pytest.raises(DrillError, match="workload.scheduler"):
        parse({**doc, "workload": {**doc["workload"], "scheduler": "pbs"}})
