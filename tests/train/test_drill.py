"""`twin drill run`: shipped drills pass on rack, a wrong expectation fails with its reason, the
same seed gives the same report."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fabric.conftest import REASON as FABRIC_REASON
from tests.slurm.conftest import REASON as SLURM_REASON

ROOT = Path(__file__).resolve().parents[2]
DRILLS = ROOT / "topologies" / "drills"
TWIN = [sys.executable, "-m", "emulator.cli.main"]


def drill(path: Path, out: Path, seed: int = 7) -> tuple[subprocess.CompletedProcess[str], dict]:
    r = subprocess.run([*TWIN, "drill", "run", str(path), "--seed", str(seed), "--out", str(out)],
                       capture_output=True, text=True, timeout=180, cwd=ROOT)
    report = json.loads((out / "report.json").read_text()) if (out / "report.json").exists() else {}
    return r, report


def compared(report: dict) -> dict:
    return {k: v for k, v in report.items() if k != "wall"}


def test_gpu_falls_off_bus_passes_and_is_reproducible(tmp_path: Path) -> None:
    r, rep = drill(DRILLS / "gpu_falls_off_bus.yaml", tmp_path / "a")
    assert r.returncode == 0, r.stdout + r.stderr
    assert rep["passed"] and rep["failures"][0]["resumed_from"] == 100
    html = (tmp_path / "a" / "report.html").read_text()
    assert "<svg" in html and "gpu-lost" in html and "<script" not in html
    r2, rep2 = drill(DRILLS / "gpu_falls_off_bus.yaml", tmp_path / "b")
    assert r2.returncode == 0
    assert compared(rep) == compared(rep2)


def test_checkpoint_interval_study_passes(tmp_path: Path) -> None:
    r, rep = drill(DRILLS / "checkpoint_interval_study.yaml", tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    s = rep["study"]
    assert s["young_s"] == pytest.approx((2 * 9.8 * 8 * 3600) ** 0.5)
    assert "Daly" in (tmp_path / "report.html").read_text()


@pytest.mark.skipif(bool(FABRIC_REASON), reason=FABRIC_REASON or "ok")
def test_leaf_switch_lost(tmp_path: Path) -> None:
    r, rep = drill(DRILLS / "leaf_switch_lost.yaml", tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    # the live fabric says every server lost the 4 rails of ib-leaf01, and the job slowed, not failed
    assert "rails down on gpu001 4/8" in r.stdout
    assert rep["metrics"]["max_throughput_drop_pct"] > 0.25


def test_wrong_expectation_fails_and_says_why(tmp_path: Path) -> None:
    r, rep = drill(ROOT / "tests" / "data" / "drills" / "wrong_expectation.yaml", tmp_path)
    assert r.returncode == 1
    bad = {x["expectation"]: x["why"] for x in rep["expectations"] if not x["passed"]}
    assert set(bad) == {"failures", "goodput_at_least"}
    assert "1 job failure(s), expected 0" in bad["failures"] and "goodput" in bad["goodput_at_least"]
    assert "FAIL failures" in r.stdout


@pytest.mark.skipif(bool(SLURM_REASON), reason=SLURM_REASON or "ok")
def test_preemption_through_the_real_slurm(tmp_path: Path) -> None:
    r, rep = drill(DRILLS / "preemption.yaml", tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert rep["scheduler"] == {**rep["scheduler"], "kind": "slurm", "requeues": 1}
    (f,) = rep["failures"]
    assert f["kind"] == "preempted" and f["resumed_from"] == f["last_checkpoint"] >= 20
    assert rep["attempts"][1]["first_step"] == f["resumed_from"] + 1 and rep["final"]["step"] == 60
    assert "DUE TO PREEMPTION" in Path(rep["wall"]["slurm_output"]).read_text()
