"""llite.*.stats as lprocfs prints it (client/stats.py), with a clock the test sets."""

from __future__ import annotations

import pytest

from services.lustre.client.stats import Stats


def test_counters_print_count_min_max_sum_and_squares_in_lustres_order() -> None:
    now = [5_000_000_000]
    s = Stats(lambda: now[0])
    s.add("open", 30)
    s.add("write_bytes", 4096)
    s.add("open", 10)
    s.add("write_bytes", 100)
    now[0] = 7_250_000_001
    assert s.render() == (
        "snapshot_time             7.250000001 secs.nsecs\n"
        "start_time                5.000000000 secs.nsecs\n"
        "elapsed_time              2.250000001 secs.nsecs\n"
        "write_bytes               2 samples [bytes] 100 4096 4196 16787216\n"   # before open, as Lustre's table
        "open                      2 samples [usecs] 10 30 40 1000\n")


def test_clear_zeroes_every_counter_and_starts_the_time_again() -> None:
    now = [1_000_000_000]
    s = Stats(lambda: now[0])
    s.add("getattr", 7)
    now[0] = 3_000_000_000
    s.clear()
    assert s.render().splitlines()[1:] == ["start_time                3.000000000 secs.nsecs",
                                           "elapsed_time              0.000000000 secs.nsecs"]


def test_a_name_lustre_has_no_counter_for_is_refused() -> None:
    s = Stats()
    with pytest.raises(KeyError, match="lookup: not an llite counter"):
        s.add("lookup", 1)
    assert s.render().count("\n") == 3
