"""The storage drills on rack: an OSS failing during a checkpoint written onto the Lustre mount, and
three OSDs lost while the dataset is staged from S3 into Lustre (then trained on). Also the pieces
they rest on: the drill file's storage options, a fault half-way through a checkpoint's data."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.train.test_drill import DRILLS, drill
from workloads.drill.spec import DrillError, parse
from workloads.train import checkpoint_store

FUSE = os.geteuid() == 0 and Path("/dev/fuse").exists() and bool(shutil.which("fusermount3"))
needs_fuse = pytest.mark.skipif(not FUSE, reason="needs root, /dev/fuse and fusermount3 (the Lustre mount)")

BASE = {"name": "d", "topology": "rack", "twin": {"lustre": True, "ceph": True},
        "workload": {"gpus": 32, "pp": 4, "steps": 40, "checkpoint_every": 20, "time_scale": 0}}


@needs_fuse
def test_oss_during_checkpoint(tmp_path: Path) -> None:
    r, rep = drill(DRILLS / "oss_during_checkpoint.yaml", tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    lost, back = rep["faults"]
    # the OSS was killed half-way through checkpoint 40's data, on the mount; the checkpoint completed
    assert lost["checkpoint"] == 40 and {"oss_failover", "checkpoint_complete"} <= set(lost["observed"])
    assert "oss_failback" in back["observed"]
    assert rep["checkpoints"]["complete"] == [20, 40, 60] and not rep["checkpoints"]["incomplete"]
    assert rep["failures"] == [] and rep["final"]["status"] == "completed"
    assert rep["storage"]["checkpoint_dir"] == "lustre mount"
    # the write time is the Lustre model's, with the live fault applied while oss01 was down
    models = [e["storage"] for e in rep["timeline"] if e["kind"] == "checkpoint"]
    assert "healthy" in models[0] and "failed OSS [0]" in models[1] and "healthy" in models[2]
    assert any(e["kind"] == "fault" and e["name"] == "oss-lost" for e in rep["timeline"])


@needs_fuse
def test_osds_lost_during_staging(tmp_path: Path) -> None:
    r, rep = drill(DRILLS / "osds_lost_during_staging.yaml", tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    st = rep["stage"]
    assert st["objects"] == st["listed"] == st["verified_after_stage"] == 32 and not st["failed"]
    assert isinstance(st["retries"], list) and st["retry_wait_s"] >= 0
    down, out = rep["faults"]
    assert "osd_down" in down["observed"] and "osd_out" in out["observed"] and down["staged_pct"] >= 30
    # the training read its dataset from the mount each step (2 files a step) and checkpointed there
    assert rep["storage"]["dataset_reads"] == 80 and rep["storage"]["storage_failures"] == []
    assert rep["final"]["status"] == "completed" and rep["checkpoints"]["complete"] == [20, 40]
    assert [e for e in rep["timeline"] if e["kind"] == "stage"]


def test_storage_options_are_validated() -> None:
    ok = parse({**BASE, "storage": {"checkpoints": "lustre", "dataset": {"objects": 4}},
                "schedule": [{"name": "x", "at": {"staged_pct": 50}, "fault": "osd", "osds": [0], "mode": "stop"},
                             {"name": "y", "at": {"checkpoint": 20}, "fault": "oss", "mode": "failover"}]})
    assert ok.storage["lustre_mount"] and ok.storage["dataset"]["object_kib"] == 512
    bad = [
        ({"schedule": [{"at": {"staged_pct": 50}, "fault": "osd"}]}, "needs 'storage: {dataset"),
        ({"schedule": [{"at": {"checkpoint": 30}, "fault": "oss"}]}, "a step the workload checkpoints at"),
        ({"storage": {"dataset": {}}, "twin": {"lustre": True}}, "needs 'twin: {ceph"),
        ({"storage": {"checkpoints": "tape"}}, "local or lustre"),
        ({"schedule": [{"at": {"step": 3}, "fault": "osd", "mode": "explode"}]}, "kill, stop, start, out or in"),
        ({"schedule": [{"at": {"step": 3}, "fault": "oss"}], "twin": {}}, "Lustre faults need"),
    ]
    for extra, msg in bad:
        with pytest.raises(DrillError, match=msg.replace("{", r"\{").replace("(", r"\(")):
            parse({**BASE, **extra})


def test_checkpoint_midway_hook_fires_half_way(tmp_path: Path) -> None:
    seen = []

    def midway() -> None:
        seen.append((tmp_path / "step_00000007" / checkpoint_store.SHARD).stat().st_size)

    ck = checkpoint_store.write(tmp_path, 7, 3 << 20, {"job_id": "j"}, midway=midway,
                                before_manifest=lambda: seen.append("data"))
    assert seen == [(3 << 20) // 2, "data"] and checkpoint_store.verify(ck.path) is not None


def test_dataset_read_per_step_and_an_io_error_fails_the_job(tmp_path: Path) -> None:
    from workloads.train.config import TrainConfig
    from workloads.train.runner import Hooks, TrainJob

    data = tmp_path / "data"
    data.mkdir()
    for i in range(4):
        (data / f"shard-{i}.bin").write_bytes(bytes(1000 + i))
    cfg = TrainConfig(gpus=32, pp=4, steps=10, time_scale=0, dataset=str(data), dataset_reads_per_step=2)
    res = TrainJob(cfg, None).run()
    assert res.status == "completed" and res.dataset_reads == 20 and res.dataset_bytes >= 20 * 1000

    def lose_files(job: TrainJob, step: int, t: float) -> None:
        if step == 6:  # the files vanish under the job (an OST lost): its next read fails
            for p in data.iterdir():
                p.unlink()

    res = TrainJob(cfg, None, hooks=Hooks(before_step=lose_files)).run()
    assert res.status == "failed" and res.failure_kind == "storage" and res.last_step == 5
    assert "dataset read" in res.reason and "ENOENT" in res.reason
