"""The Slurm drill's report from the attempts the training job recorded: a checkpoint written as
Slurm's SIGTERM arrived, before its event was recorded, is the latest one, not a lost one (CI saw
"resumed from 30 though 20 existed" for exactly that)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from workloads.drill import expectations, slurm_runner, spec
from workloads.train import checkpoint_store

DRILLS = Path(__file__).resolve().parents[2] / "topologies" / "drills"


def attempts(recorded: list[int], resumed_from: int) -> list[dict[str, Any]]:
    cks = [{"kind": "checkpoint", "step": s, "t_s": s * 10.0, "write_s": 1.0} for s in recorded]
    return [{"status": "terminated", "last_step": 30, "modelled_s": 305.0,
             "reason": "SIGTERM (preempted or cancelled)",
             "events": [{"kind": "start", "t_s": 0.0, "step_s": 10.0}, *cks]},
            {"status": "completed", "resumed_from": resumed_from, "last_step": 60, "modelled_s": 300.0,
             "restore_s": 5.0, "events": [{"kind": "resumed", "t_s": 0.0, "restore_s": 5.0}]}]


def report_of(tmp_path: Path, recorded: list[int], resumed_from: int) -> dict[str, Any]:
    ck = tmp_path / "ck"
    for step in (10, 20, 30):
        checkpoint_store.write(ck, step, 4096, {"job_id": "1", "step": step})
    fired = [{"name": "regression-run", "attempt": 0, "fault": "preempt", "step": 25, "effect": "preempted",
              "hold_modelled_s": 60.0}]
    report: dict[str, Any] = {"timeline": [], "attempts": [], "failures": []}
    slurm_runner._report(spec.load(DRILLS / "preemption.yaml"), report, attempts(recorded, resumed_from), fired,
                         [], ck, {"slurm_restarts": 1})
    return report


def no_checkpoint_lost(report: dict[str, Any]) -> dict[str, Any]:
    return expectations.check([{"no_checkpoint_lost": True}], report)[0]


def test_a_checkpoint_whose_event_the_sigterm_cut_off_is_the_latest(tmp_path: Path) -> None:
    report = report_of(tmp_path, [10, 20], resumed_from=30)
    assert report["failures"][0]["last_checkpoint"] == 30
    assert report["checkpoints"]["written"] == [10, 20, 30] and report["checkpoints"]["lost"] == []
    assert no_checkpoint_lost(report)["passed"]


def test_a_resume_from_an_older_checkpoint_still_fails(tmp_path: Path) -> None:
    verdict = no_checkpoint_lost(report_of(tmp_path, [10, 20, 30], resumed_from=20))
    assert not verdict["passed"] and "resumed from 20 though 30 existed" in verdict["why"]
