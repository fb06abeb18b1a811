"""`services.slurm.lifecycle.up` refuses clearly before starting anything (no daemons needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from emulator.rundir import RunDir
from services.slurm import lifecycle


def test_missing_tools_are_named_with_the_packages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lifecycle, "missing_tools", lambda: ["slurmctld", "munged"])
    with pytest.raises(lifecycle.SlurmTwinError, match=r"needs slurmctld, munged: apt-get install slurm-wlm munge"):
        lifecycle.up(RunDir(tmp_path))
    assert not (tmp_path / "slurm").exists()


def test_nothing_running_is_reported_not_raised(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    assert lifecycle.running(run) is None
    assert lifecycle.down(run) == []
    assert lifecycle.status(run) | {"run_dir": ""} == {
        "run_dir": "", "pid": None, "state": "absent", "slurm_conf": str(tmp_path.resolve() / "slurm" / "slurm.conf"),
        "nodes": {}, "error": "", "restarts": 0}
