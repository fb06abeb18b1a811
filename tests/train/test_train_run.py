"""`twin train` against a running `rack` twin: leases, checkpoints, an Xid 79 kills it, --resume continues."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from emulator.client import Twin
from workloads.train import checkpoint_store

TWIN = [sys.executable, "-m", "emulator.cli.main"]


@pytest.fixture(scope="module")
def rack(tmp_path_factory: pytest.TempPathFactory):
    with Twin.up("rack", run_dir=tmp_path_factory.mktemp("train") / "twin") as twin:
        yield twin


def train(rack: Twin, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*TWIN, "train", "--run-dir", str(rack.run.path), "--gpus", "32", "--pp", "4",
                           "--take-mig", "--json", *args], capture_output=True, text=True, timeout=120)


def test_200_steps_with_checkpoints_lease_and_release(rack: Twin, tmp_path: Path) -> None:
    seen: list[int] = []
    with rack.events("train/j-ok/#") as sub:
        r = train(rack, "--steps", "200", "--checkpoint-every", "50", "--checkpoint-dir", str(tmp_path),
                  "--time-scale", "0", "--job-id", "j-ok")
        assert r.returncode == 0, r.stderr
        while not sub.messages.empty():
            m = sub.messages.get_nowait()
            if m["_topic"].endswith("/progress"):
                seen.append(m["step"])
    out = json.loads(r.stdout)
    assert out["status"] == "completed" and out["last_step"] == 200 and out["checkpoints"] == [50, 100, 150, 200]
    assert "modelled" in r.stderr and out["checkpoint_s"] == pytest.approx(4 * 9.8)
    assert [c.step for c in checkpoint_store.scan(tmp_path)[0]] == [50, 100, 150, 200]
    assert seen and seen[-1] == 200
    for s in rack.gpu_nodes:
        leases = [x for x in rack.gpu_node(s).leases(include_ended=True) if x.job_id == "j-ok"]
        assert leases and all(not x.active and x.end_reason == "released" for x in leases)


def test_xid79_fails_the_job_and_resume_continues(rack: Twin, tmp_path: Path) -> None:
    def inject() -> None:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if checkpoint_store.latest(tmp_path) is not None:
                rack.gpu_node("gpu002").inject_xid(gpu=5, xid=79)
                return
            time.sleep(0.02)

    th = threading.Thread(target=inject)
    th.start()
    r = train(rack, "--steps", "200", "--checkpoint-every", "50", "--checkpoint-dir", str(tmp_path),
              "--time-scale", "4000", "--job-id", "j-xid")
    th.join()
    assert r.returncode == 1, r.stdout + r.stderr
    out = json.loads(r.stdout)
    assert out["status"] == "failed" and "xid 79" in out["reason"].lower() and "gpu002" in out["reason"]
    assert "xid 79" in r.stderr.lower()
    last = checkpoint_store.latest(tmp_path).step
    assert 50 <= last < 200 and out["last_step"] >= last
    rack.gpu_node("gpu002").reboot()  # the GPU is lost until the node reboots
    r2 = train(rack, "--steps", "200", "--checkpoint-every", "50", "--checkpoint-dir", str(tmp_path),
               "--time-scale", "0", "--job-id", "j-xid", "--resume")
    assert r2.returncode == 0, r2.stderr
    out2 = json.loads(r2.stdout)
    assert out2["resumed_from"] == last and out2["first_step"] == last + 1 and out2["last_step"] == 200


def test_bad_options_change_nothing(rack: Twin, tmp_path: Path) -> None:
    r = train(rack, "--gpus", "12", "--checkpoint-dir", str(tmp_path / "ck"))
    assert r.returncode == 2 and "--gpus" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "ck").exists()
