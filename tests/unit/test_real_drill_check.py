"""The real drill's checkpoint expectation (workloads/train/real_drill.py: check): the restart must take
the last checkpoint written before the group restarted, which may be one due after the fault itself
(the group feels a lost GPU at the rank's next health check)."""

from __future__ import annotations

from workloads.train.real_drill import check

EXPECT = [{"resumed_from_last_checkpoint_before_fault": True}]


def run(resumed_from: int, checkpoints_at: list[tuple[int, float]]) -> dict:
    return {"fault": {"t": 10.0}, "attempts": [{"t": 0.0}, {"t": 40.0}], "checkpoints_at": checkpoints_at,
            "resumed_from_step": resumed_from}


def test_a_checkpoint_written_after_the_fault_but_before_the_restart_is_the_one_to_resume_from() -> None:
    ck = [(50, 3.0), (100, 6.0), (150, 12.0)]
    assert check(EXPECT, run(150, ck))[0]["passed"]
    assert not check(EXPECT, run(100, ck))[0]["passed"]   # a checkpoint was skipped


def test_resuming_from_a_checkpoint_after_the_restart_or_from_none_fails() -> None:
    assert check(EXPECT, run(100, [(50, 3.0), (100, 6.0)]))[0]["passed"]
    assert not check(EXPECT, run(150, [(50, 3.0), (100, 6.0), (150, 45.0)]))[0]["passed"]
    assert not check(EXPECT, run(0, []))[0]["passed"]


def test_the_rails_after_the_fault_are_the_last_attempts_channels() -> None:
    want = [{"rails_after_fault": [4]}]
    assert check(want, {"allreduce_last": {"channels": [4], "rails_up": 4}})[0]["passed"]
    assert not check(want, {"allreduce_last": {"channels": [0, 1], "rails_up": 8}})[0]["passed"]
    assert not check(want, {})[0]["passed"]
