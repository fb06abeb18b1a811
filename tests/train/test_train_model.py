"""The training workload's pure models: compute, step, checkpoint cost, Young/Daly, files."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest

from workloads.drill.spec import DrillError, load
from workloads.train import checkpoint_store
from workloads.train.checkpoint_model import daly_interval, goodput, simulate_goodput, write_time, young_interval
from workloads.train.compute import compute_time
from workloads.train.config import TrainConfig, TrainConfigError
from workloads.train.step import step_time

DRILLS = Path(__file__).resolve().parents[2] / "topologies" / "drills"


def test_seed_job_compute_time_follows_6nt_over_peak_times_mfu() -> None:
    cfg = TrainConfig()  # 70B, 1024 GPUs, 1024 x 4096 tokens, MFU 0.4
    assert cfg.dp == 32 and cfg.tokens_per_step == 4_194_304
    c = compute_time(cfg)
    assert c.flops_per_step == pytest.approx(6 * 70e9 * 4_194_304)
    assert c.time_s == pytest.approx(6 * 70e9 * 4_194_304 / 1024 / (989e12 * 0.4))
    assert c.time_s == pytest.approx(4.349, abs=1e-3)
    assert compute_time(cfg.with_(mfu=0.5)).time_s == pytest.approx(c.time_s * 0.4 / 0.5)


def test_step_adds_exposed_dp_comm_and_a_degraded_fabric_slows_it() -> None:
    from services.fabric.collectives import FabricView

    cfg = TrainConfig()
    healthy = step_time(cfg)
    assert healthy.dp_s > 0 and healthy.total_s == pytest.approx(healthy.compute.time_s + healthy.comm_s)
    servers = [f"gpu{i + 1:03d}" for i in range(128)]
    half = FabricView(rails_up=dict.fromkeys(servers, 4))
    assert step_time(cfg, half).dp_s > healthy.dp_s * 1.5
    assert 1 <= healthy.utilization <= 100


def test_checkpoint_write_time_uses_bandwidth_or_the_storage_hook() -> None:
    cfg = TrainConfig()
    assert cfg.checkpoint_bytes == 980_000_000_000
    assert write_time(cfg.checkpoint_bytes, 100.0) == pytest.approx(9.8)
    assert write_time(10**9, 1.0, storage=lambda b: b / 2e9) == pytest.approx(0.5)
    with pytest.raises(ValueError):
        write_time(10, 1.0, storage=lambda b: -1.0)


def test_young_daly_and_goodput() -> None:
    delta, mtbf = 9.8, 8 * 3600
    assert young_interval(delta, mtbf) == pytest.approx(math.sqrt(2 * delta * mtbf))
    daly = daly_interval(delta, mtbf)
    assert abs(daly - young_interval(delta, mtbf)) < 0.02 * daly
    g = goodput(daly, delta, mtbf, 720)
    assert 0.9 < g < 1 and g > goodput(daly / 5, delta, mtbf, 720) and g > goodput(daly * 5, delta, mtbf, 720)
    sim = [simulate_goodput(daly, delta, mtbf, 720, 336 * 3600, random.Random(i)).goodput for i in range(10)]
    assert sum(sim) / 10 == pytest.approx(g, abs=0.01)


def test_bad_config_is_refused_with_the_option_named() -> None:
    with pytest.raises(TrainConfigError, match="--gpus 12"):
        TrainConfig(gpus=12)
    with pytest.raises(TrainConfigError, match="--tp 3"):
        TrainConfig(tp=3)
    with pytest.raises(TrainConfigError, match="--servers lists 1"):
        TrainConfig(gpus=16, servers=("gpu001",))


def test_checkpoint_is_complete_only_with_its_manifest(tmp_path: Path) -> None:
    checkpoint_store.write(tmp_path, 50, 1000, {"job_id": "j"})
    half = checkpoint_store.step_dir(tmp_path, 100)
    half.mkdir()
    (half / checkpoint_store.SHARD).write_bytes(b"x" * 10)  # crashed before the manifest was renamed in
    good, bad = checkpoint_store.scan(tmp_path)
    assert [c.step for c in good] == [50] and bad == [half]
    assert checkpoint_store.latest(tmp_path).step == 50
    (checkpoint_store.step_dir(tmp_path, 50) / checkpoint_store.SHARD).write_bytes(b"y" * 1000)  # damaged
    assert checkpoint_store.latest(tmp_path) is None


def test_shipped_drills_parse_and_bad_drills_are_refused(tmp_path: Path) -> None:
    from workloads.train import real_drill

    for f in DRILLS.glob("*.yaml"):
        # A real-job drill (`workload: {real: true}`, issue 18) has its own parser, as `twin drill run` does.
        assert (real_drill.parse(f)["name"] if real_drill.is_real(f) else load(f).name) == f.stem
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\ntopology: rack\nworkload: {gpus: 32}\nschedule:\n  - {name: a, at: {step: 1}, "
                   "fault: meteor}\n")
    with pytest.raises(DrillError, match=r"schedule\[0\].*meteor"):
        load(bad)


@pytest.mark.parametrize("entry, problem", [
    ("{name: a, at: {step: 1}, fault: {xid: 79}}", r"schedule\[0\]: fault \{'xid': 79\}; choose one of"),
    ("{name: [a], at: {step: 1}, fault: xid, xid: 79}", r"schedule\[0\]: the name \['a'\] is not a string"),
])
def test_a_fault_kind_or_name_of_the_wrong_type_is_refused_with_the_entry(tmp_path: Path, entry: str,
                                                                           problem: str) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(f"name: x\ntopology: rack\nworkload: {{gpus: 32}}\nschedule:\n  - {entry}\n")
    with pytest.raises(DrillError, match=problem):
        load(bad)
