"""`twin chaos`: a 2-minute seeded run of rack with the fabric, Ceph, Lustre and Slurm under
`--network netns`, while the seeded schedule kills daemons, takes cables down, cuts hosts, stops OSDs,
kills an OSS and injects Xids. The report must show nothing lost, everything healthy, no fault left,
`twin down` within its target and nothing left behind; and its schedule must be the one its seed gives."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import netns_skip_reason
from workloads.chaos import schedule

ROOT = Path(__file__).resolve().parents[2]
TWIN = str(Path(sys.executable).parent / "twin")
SEED, MINUTES = 27, 2   # seed 27's two minutes hold every kind of fault (asserted below)


def _why_skip() -> str:
    from services.fabric.subnet import missing_tools as fabric_missing
    from services.slurm.cluster import missing_tools as slurm_missing

    if reason := netns_skip_reason("the chaos run"):
        return reason
    missing = fabric_missing() + slurm_missing()
    if missing or not Path("/dev/fuse").exists():
        return f"the chaos run needs {', '.join(missing) or '/dev/fuse'} (`make install`)"
    return ""


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict:
    if reason := _why_skip():
        pytest.skip(reason)
    out = tmp_path_factory.mktemp("chaos")
    r = subprocess.run([TWIN, "chaos", "--seed", str(SEED), "--minutes", str(MINUTES), "--out", str(out)],
                       capture_output=True, text=True, timeout=1200, cwd=ROOT)
    doc = json.loads((out / "report.json").read_text())
    doc["_rc"], doc["_stderr"], doc["_stdout"] = r.returncode, r.stderr, r.stdout
    assert (out / "report.html").read_text().startswith("<!doctype html>")
    return doc


@pytest.mark.timeout(1500)
def test_nothing_acknowledged_is_lost_and_every_check_passes(report: dict) -> None:
    failed = {k: c["detail"] for k, c in report["checks"].items() if not c["passed"]}
    assert not failed, (failed, report["_stdout"][-3000:], report.get("error"))
    assert report["_rc"] == 0, report["_stderr"][-2000:]
    readback = report["checks"]["every acknowledged write reads back byte-identical"]["detail"]
    assert readback["total"] == 0 and readback["complete"]
    assert readback["s3"]["checked"] > 0 and readback["lustre"]["checked"] > 0
    ops = report["workload"]["operations"]
    for kind in ("s3 put", "s3 multipart", "lustre write", "slurm sbatch"):
        assert ops[kind]["ok"] > 0, (kind, ops)
    assert ops["gpu lease"]["leased"] > 0
    jobs = report["checks"]["every slurm job completed"]["detail"]
    assert jobs["submitted"] == jobs["completed"] > 0


@pytest.mark.timeout(1500)
def test_every_fault_was_injected_cleared_and_recovered(report: dict) -> None:
    faults = report["faults"]
    assert len(faults) >= MINUTES * 4
    assert {f["kind"] for f in faults} == set(schedule.KINDS)
    links = [f for f in report["plan"] if f["kind"] == "link-down"]
    assert {f["target"]["fabric"] for f in links} == {"compute", "ethernet"}
    assert any(f["target"]["index"] is None for f in links)   # a whole leaf-spine link of the fat tree
    cut = {f["target"]["host"] for f in report["plan"] if f["kind"] == "cut"}
    assert cut & {"gpu001", "gpu002"} and any(h.startswith("ceph") for h in cut)   # a workload's host, an OSD's
    for f in faults:
        assert not f.get("errors") and "injected_s" in f, f
        assert f.get("recovered") is True, f
        if f["kind"] != "kill":
            assert f["injected_s"] < f["cleared_s"], f
    assert report["checks"]["no fault active"]["detail"] == "none"


@pytest.mark.timeout(1500)
def test_twin_down_is_quick_and_leaves_nothing(report: dict) -> None:
    assert report["down_s"] <= 15.0
    assert report["leftovers"] == {}


@pytest.mark.timeout(1500)
def test_the_schedule_is_the_one_the_seed_gives(report: dict) -> None:
    inv = schedule.inventory_from_json(report["inventory"])
    plan = schedule.plan(SEED, MINUTES * 60, inv)
    assert schedule.digest(plan) == report["plan_digest"]
    assert schedule.as_json(plan) == report["plan"]
    assert [f["id"] for f in report["faults"]] == [f.id for f in plan]


def test_bad_options_are_refused_before_anything_starts(tmp_path: Path) -> None:
    for args in (["--minutes", "0"], ["--network", "mininet"]):
        r = subprocess.run([TWIN, "chaos", *args, "--out", str(tmp_path / "out")], capture_output=True, text=True,
                           timeout=60, cwd=ROOT)
        assert r.returncode == 2 and "--" in r.stderr, r.stderr
        assert not (tmp_path / "out").exists()
