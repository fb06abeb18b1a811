"""Which rails a real job's ranks talk over (workloads/train/rails.py): the rails up on every server,
and the channels the job gets of them."""

from __future__ import annotations

import pytest

from workloads.train.rails import NoRail, channels, common


def test_the_rails_kept_are_those_up_on_every_server() -> None:
    assert common([[0, 1, 2, 4, 5], [1, 2, 4, 5, 6], [1, 4, 5]]) == [1, 4, 5]
    assert common([range(8), range(8)]) == list(range(8))
    assert common([]) == []


def test_a_healthy_server_uses_its_own_gpus_rails() -> None:
    assert channels(list(range(8)), per_server=2, rails=8) == [0, 1]
    assert channels(list(range(8)), per_server=8, rails=8) == list(range(8))
    assert channels(list(range(8)), per_server=1, rails=8) == [0]


def test_with_a_leaf_down_the_job_gets_its_share_of_the_rails_left() -> None:
    # ib-leaf01 (rails 0-3) lost: 8 GPUs get the 4 rails left; 2 GPUs get one of them (2 x 4/8)
    assert channels([4, 5, 6, 7], per_server=8, rails=8) == [4, 5, 6, 7]
    assert channels([4, 5, 6, 7], per_server=2, rails=8) == [4]
    assert channels([4, 5, 6, 7], per_server=4, rails=8) == [4, 5]
    # one of its own rails down: the one left first, then another up (2 x 7/8, rounded up)
    assert channels([1, 2, 3, 4, 5, 6, 7], per_server=2, rails=8) == [1, 2]
    assert channels([0, 1, 2, 3, 5, 6, 7], per_server=8, rails=8) == [0, 1, 2, 3, 5, 6, 7]


def test_no_common_rail_is_refused() -> None:
    with pytest.raises(NoRail, match="no compute rail is up on every server"):
        channels([], per_server=2, rails=8)
