"""A real rank's GPU health check (workloads/train/gpu_health.py) without a twin: which device a rank
checks, and that no NVML at all turns the check off (and says why) rather than stopping training;
and the real drills' fault schedule, refused when malformed. With the twin's NVML:
tests/nvml/test_nvml_loopback.py (GpuLost after Xid 79) and tests/train/test_real_train.py (the drill)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from emulator.errors import BadInput
from workloads.drill.spec import DrillError
from workloads.train.gpu_health import rank_device
from workloads.train.real_drill import options, parse
from workloads.train.real_launch import RealOptions


def test_a_rank_checks_the_device_its_lease_gave_it() -> None:
    uuids = "GPU-aaaa,GPU-bbbb"
    assert rank_device(1, {"NVIDIA_VISIBLE_DEVICES": uuids, "CUDA_VISIBLE_DEVICES": "0,1"}) == "GPU-bbbb"
    assert rank_device(0, {"NVIDIA_VISIBLE_DEVICES": "MIG-1234,MIG-5678"}) == "MIG-1234"
    assert rank_device(1, {"CUDA_VISIBLE_DEVICES": "5,6"}) == "1"   # Slurm's: NVML numbers what it sees from 0
    assert rank_device(1, {"CUDA_VISIBLE_DEVICES": "GPU-aaaa,GPU-bbbb"}) == "GPU-bbbb"
    assert rank_device(3, {}) == "3"
    assert rank_device(2, {"NVIDIA_VISIBLE_DEVICES": "all"}) == "2"
    with pytest.raises(ValueError, match="LOCAL_RANK 2 but NVIDIA_VISIBLE_DEVICES lists 2 devices"):
        rank_device(2, {"NVIDIA_VISIBLE_DEVICES": uuids})


def test_no_nvml_turns_the_check_off_and_says_why(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "CLUSTERTWIN_NVML")}
    code = ("import json\nfrom workloads.train.gpu_health import GpuHealth\nh = GpuHealth(0)\nh.check()\n"
            "print(json.dumps(h.state))")
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == "off: NVML Shared Library Not Found"


def test_a_negative_check_interval_is_refused(tmp_path: Path) -> None:
    p = subprocess.run([sys.executable, "-m", "workloads.train.real_worker", "--steps", "1", "--checkpoint-dir",
                        str(tmp_path / "ck"), "--events", str(tmp_path / "ev"), "--health-every", "-1"],
                       capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert p.returncode == 2 and "--health-every -1: 0 (no checks) or more steps" in p.stderr
    assert not (tmp_path / "ck").exists() and not (tmp_path / "ev").exists()


@pytest.mark.parametrize("fault", [
    "{fault: xid, host: gpu003, xid: 79, at: {step: 10}}",               # whose GPU: no local_rank
    "{fault: xid, host: gpu003, local_rank: 1, at: {step: 10}}",         # no Xid
    "{fault: reboot, host: gpu003, at: {step: 10}}",                     # not a real drill's fault
    "{fault: cut, host: gpu003}",                                        # no step
    "{fault: switch-down, at: {step: 10}}",                              # which switch
])
def test_a_malformed_fault_is_refused(tmp_path: Path, fault: str) -> None:
    f = tmp_path / "d.yaml"
    f.write_text(f"name: d\ntopology: rack\nworkload: {{real: true}}\nschedule:\n  - {fault}\n")
    with pytest.raises(BadInput, match="a real drill's fault is"):
        parse(f)


def test_a_dataset_needs_ceph_and_lustre(tmp_path: Path) -> None:
    f = tmp_path / "d.yaml"
    f.write_text("name: d\ntopology: rack\ntwin: {lustre: true}\nworkload: {real: true}\n"
                 "storage: {dataset: {objects: 2}}\n")
    with pytest.raises(DrillError, match=r"needs 'twin: \{ceph: true, lustre: true\}'"):
        parse(f)
    f.write_text("name: d\ntopology: rack\ntwin: {lustre: true, ceph: true}\nworkload: {real: true}\n"
                 "storage: {checkpoints: lustre}\n")
    with pytest.raises(BadInput, match="a real drill's storage is"):
        parse(f)


def test_the_shipped_real_drills_parse() -> None:
    drills = Path(__file__).resolve().parents[2] / "topologies" / "drills"
    faults = {d.name: parse(d)["schedule"][0]["fault"] for d in sorted(drills.glob("real_*.yaml"))}
    assert faults == {"real_gpu_lost.yaml": "xid", "real_leaf_lost.yaml": "switch-down", "real_node_cut.yaml": "cut"}


@pytest.mark.parametrize("workload", ["{real: true, rdzv_join_timeout_s: 0}", "{real: true, gloo_timeout_s: -1}",
                                      "{real: true, rdzv_join_timeout_s: soon}", "{real: true, gloo_timeout_s: true}"])
def test_a_timeout_that_is_not_seconds_above_0_is_refused(tmp_path: Path, workload: str) -> None:
    f = tmp_path / "d.yaml"
    f.write_text(f"name: d\ntopology: rack\nworkload: {workload}\n"
                 "schedule:\n  - {fault: cut, host: gpu003, at: {step: 10}}\n")
    with pytest.raises(BadInput, match=r"workload (rdzv_join|gloo)_timeout_s: seconds above 0"):
        parse(f)


def test_a_drills_timeouts_reach_the_job() -> None:
    """real_leaf_lost sets torchrun's join_timeout to 30 s; a drill that leaves it out gets the launcher's."""
    drills = Path(__file__).resolve().parents[2] / "topologies" / "drills"
    leaf = options("real_leaf_lost", parse(drills / "real_leaf_lost.yaml")["workload"], "")
    assert (leaf.rdzv_join_timeout_s, leaf.gloo_timeout_s, leaf.steps, leaf.nodes) == (30, 20, 300, 3)
    cut = options("real_node_cut", parse(drills / "real_node_cut.yaml")["workload"], "/data")
    assert (cut.rdzv_join_timeout_s, cut.dataset) == (RealOptions.rdzv_join_timeout_s, "/data")
