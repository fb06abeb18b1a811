"""Lifecycle day arithmetic as RGW's obj_has_expired does it, and `twin up`'s refusal of a bad
--rgw-lc-debug-interval."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from emulator import lifecycle as twin
from emulator.lifecycle import TwinError
from emulator.rundir import RunDir
from services.ceph.rgw import lifecycle


def at(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def test_real_days_count_from_midnight_utc() -> None:
    put = at("2026-03-01 23:59")
    assert not lifecycle._reached(put, 1, at("2026-03-02 23:59"), lifecycle.DAY)  # a full day, no midnight yet
    assert lifecycle._reached(put, 1, at("2026-03-03 00:00"), lifecycle.DAY)
    assert not lifecycle._reached(at("2026-03-01 00:00"), 2, at("2026-03-02 23:59:59"), lifecycle.DAY)
    assert lifecycle._reached(at("2026-03-01 00:00"), 2, at("2026-03-03 00:00"), lifecycle.DAY)


def test_debug_interval_days_are_exact() -> None:
    assert not lifecycle._reached(100.0, 3, 100.0 + 3 * 10 - 0.001, 10.0)
    assert lifecycle._reached(100.0, 3, 130.0, 10.0)


def test_twin_up_refuses_a_bad_interval(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "run")
    for kw in ({"rgw_lc_debug_interval": 5.0}, {"ceph": True, "rgw_lc_debug_interval": -1.0}):
        with pytest.raises(TwinError, match="--rgw-lc-debug-interval needs --ceph"):
            twin.up("mini", run, **kw)  # type: ignore[arg-type]
    assert not run.manifest.exists() and run.running_supervisor() is None
