"""`twin train --real` end to end (issue 18 part 2): real torchrun ranks with gloo in the GPU servers'
namespaces of a rack twin (`--network netns --lustre --ceph`), checkpoints on the Lustre mount, and
the real drills: real_node_cut (its dataset staged from S3 into Lustre first; gpu003 cut off, gloo
times out, torchrun's elastic agents restart the group on the servers left from the last checkpoint)
and real_gpu_lost (Xid 79: the rank's NVML check stops it, the job is requeued without gpu003).
Holds the machine's netns lock while its twin is up."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from clustertwin.v1 import gpu_node_pb2 as pb_gpu
from emulator.client import Twin
from emulator.procutil import pid_alive
from tests.conftest import netns_lock, netns_skip_reason

TWIN = str(Path(sys.executable).parent / "twin")
DRILLS = Path(__file__).resolve().parents[2] / "topologies" / "drills"
DRILL = DRILLS / "real_node_cut.yaml"

@pytest.fixture(scope="module")
def rack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Twin]:
    from services.lustre.client.mount import mount_background

    base = tmp_path_factory.mktemp("real-train")
    with netns_lock():  # first: another netns twin ends before its holder lets go
        reason = netns_skip_reason("real training tests")
        if reason:
            pytest.skip(reason)
        twin = Twin.up("rack", run_dir=base / "run", network="netns", lustre=True, ceph=True, timeout=120)
        try:
            mount_background(twin.run.path, str(base / "hot"))
            yield twin
        finally:
            twin.down()


def twin(rack: Twin, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([TWIN, *args, "--run-dir", str(rack.run.path)], capture_output=True, text=True,
                          timeout=600)


def held(rack: Twin) -> list[str]:
    return [f"{s} {x.id} {x.job_id}" for s in sorted(rack.gpu_nodes) for x in rack.gpu_node(s).leases()]


def drill(rack: Twin, path: Path, out: Path) -> dict:
    """`twin drill run` of a real drill on the rack: it passes every expectation; its result."""
    r = subprocess.run([TWIN, "drill", "run", str(path), "--out", str(out), "--run-dir", str(rack.run.path)],
                       capture_output=True, text=True, timeout=900)
    report = json.loads((out / "report.json").read_text())
    failed = [x for x in report["expectations"] if not x["passed"]]
    assert r.returncode == 0 and not failed, (r.stdout[-3000:], r.stderr[-3000:], failed)
    return report["result"]


def test_bad_input_is_refused_and_changes_nothing(rack: Twin, tmp_path: Path) -> None:
    r = twin(rack, "train", "--real", "--gpus", "5", "--gpus-per-server", "2")
    assert r.returncode == 2 and "not a whole number of servers" in r.stderr
    r = twin(rack, "train", "--real", "--gpus", "4", "--gpus-per-server", "2", "--servers", "gpu001,gpu099")
    assert r.returncode == 2 and "unknown GPU server 'gpu099'" in r.stderr
    r = twin(rack, "train", "--real", "--gpus", "4", "--servers", "gpu001,gpu004", "--mig-profile", "5g.50gb")
    assert r.returncode == 2 and "not an H100 MIG device profile" in r.stderr and "2g.20gb" in r.stderr
    r = twin(rack, "train", "--gpus", "8", "--mig-profile", "2g.20gb")   # the model leases whole GPUs
    assert r.returncode == 2 and "--mig-profile is for --real" in r.stderr
    ck = tmp_path / "ck"
    ck.mkdir()
    (ck / "step-00000050.pt").write_bytes(b"an earlier run's")
    r = twin(rack, "train", "--real", "--gpus", "4", "--checkpoint-dir", str(ck))
    assert r.returncode == 2 and "--resume" in r.stderr
    assert held(rack) == []
    assert sorted(p.name for p in ck.iterdir()) == ["step-00000050.pt"]
    bad = tmp_path / "bad.yaml"   # a drill whose switch is not one of the twin's: refused before anything starts
    bad.write_text((DRILLS / "real_leaf_lost.yaml").read_text().replace("switch: ib-leaf01", "switch: ib-leaf09"))
    r = twin(rack, "drill", "run", str(bad), "--out", str(tmp_path / "bad"))
    assert r.returncode == 2 and "no switch 'ib-leaf09' in this twin" in r.stderr, r.stderr[-2000:]
    assert held(rack) == [] and not (tmp_path / "bad" / "report.json").exists()
    assert rack.network().faults() == []


def test_node_cut_drill_restarts_the_group_from_the_last_checkpoint(rack: Twin, tmp_path: Path) -> None:
    res = drill(rack, DRILL, tmp_path)
    assert res["ranks_started"] == [6, 4] and res["servers"] == ["gpu001", "gpu002", "gpu003"]
    assert res["master_addr"].startswith("10.100.")  # a compute rail
    assert res["fault"]["kind"] == "node-cut" and res["fault"]["target"] == "gpu003"
    assert res["resumed_from_step"] in res["checkpoints"] and res["fault_to_resumed_s"] > 0
    assert res["checkpoint_storage"].startswith("lustre")
    # the dataset: made in the S3 gateway, staged into Lustre by twin stage's job, read by the ranks
    assert res["stage"]["copied"] == res["stage"]["verified_after_stage"] == res["dataset_files"] == 24
    ckdir = Path(res["checkpoint_dir"])
    assert (ckdir / f"step-{res['checkpoints'][-1]:08d}.pt").stat().st_size > 0  # through the FUSE client
    ar = res["allreduce"]
    assert ar["ranks"] == 6 and ar["measured_s"] > 0 and ar["predicted"]["time_s"] > 0
    assert held(rack) == []
    # Nothing it started is left: the agents it recorded, and the cgroup their workers ran in.
    pids = json.loads((Path(res["workdir"]) / "pids.json").read_text())
    assert not [a for a in pids["agents"] if pid_alive(a["pid"])]
    if pids["cgroup"]:
        assert not os.path.exists(pids["cgroup"])


def test_gpu_lost_drill_stops_the_rank_and_requeues_without_its_server(rack: Twin, tmp_path: Path) -> None:
    """Xid 79 on gpu003's second leased GPU: that rank's NVML health check (the twin's libnvidia-ml.so.1,
    from inside gpu003's namespace) answers GPU_IS_LOST, the rank stops, and the job is requeued on
    gpu001-gpu002 from the last checkpoint; the drill reboots gpu003 afterwards, which brings the GPU
    back."""
    res = drill(rack, DRILLS / "real_gpu_lost.yaml", tmp_path)
    assert res["nvml"] == "on" and res["ranks_started"] == [6, 4]
    (lost,) = {(e["rank"], e["server"], e["local_rank"], e["error"]) for e in res["gpu_lost"]}
    gpu = rack.gpu_node("gpu003").gpus()[int(res["fault"]["target"].split()[-1])]
    assert lost == (5, "gpu003", 1, f"{gpu.uuid}: GPU is lost (NVML_ERROR_GPU_IS_LOST)")
    assert res["fault"]["kind"] == "xid-79" and res["fault"]["target"].startswith("gpu003 GPU ")
    assert [q["servers"] for q in res["requeued"]] == [["gpu001", "gpu002"]]
    assert res["resumed_from_step"] in res["checkpoints"] and res["fault_to_resumed_s"] > 0
    assert held(rack) == []
    assert {g.health for g in rack.gpu_node("gpu003").gpus()} == {pb_gpu.GPU_HEALTH_PASS}, "the reboot brought it back"


def test_mig_slices_are_ranks_reading_a_dataset(rack: Twin, tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    for i in range(3):
        (data / f"part-{i}").write_bytes(os.urandom(4096))
    # gpu004's GPUs are in the rack's all-balanced layout (two 1g.10gb, a 2g.20gb and a 3g.40gb each)
    r = twin(rack, "train", "--real", "--gpus", "4", "--gpus-per-server", "2", "--servers", "gpu001,gpu004",
             "--steps", "20", "--job-id", "mig", "--checkpoint-dir", str(tmp_path / "ck"), "--dataset", str(data),
             "--mig-profile", "2g.20gb", "--json")
    assert r.returncode == 0, r.stderr[-3000:]
    res = json.loads(r.stdout)
    assert res["status"] == "completed" and res["ranks_started"] == [4] and res["ranks_leased"] == 4
    assert res["mig"] == {"gpu004": "2g.20gb"}   # gpu001 is not in MIG mode: whole GPUs
    assert res["dataset_files"] == 3
    assert res["checkpoint_storage"].startswith("local disk (not under")  # said, not hidden
    assert held(rack) == []


def test_a_leaf_switch_down_puts_the_ranks_on_the_rails_left(rack: Twin, tmp_path: Path) -> None:
    """ib-leaf01 carries rails 0-3 of every server. Healthy, the 2 ranks per server talk over their own
    GPUs' rails 0 and 1. With the leaf down those interfaces have no carrier: the ranks find it at
    bootstrap, agree on the rails up on every server (4-7) and take as many channels as the model
    gives them (2 GPUs x 4/8 rails: one, rail 4); the rendezvous moves to rail 4 too. Before, the
    ranks bound rail 0 and 1 anyway and gloo timed out."""
    def job(name: str) -> dict:
        r = twin(rack, "train", "--real", "--gpus", "4", "--gpus-per-server", "2", "--servers", "gpu001,gpu002",
                 "--steps", "20", "--job-id", name, "--checkpoint-dir", str(tmp_path / name), "--json")
        assert r.returncode == 0, (r.stdout[-2000:], r.stderr[-3000:])
        return json.loads(r.stdout)

    rails = [f"10.100.{16 * r}.1" for r in range(8)]  # gpu001's rail addresses (emulator/network/plan.py)
    healthy = job("leaf-healthy")
    assert (healthy["allreduce"]["channels"], healthy["allreduce"]["rails_up"]) == ([0, 1], 8)
    assert healthy["master_addr"] == rails[0]
    r = twin(rack, "net", "fault", "switch-down", "ib-leaf01")
    assert r.returncode == 0, r.stderr
    try:
        down = job("leaf-down")
    finally:
        r = twin(rack, "net", "fault", "switch-up", "ib-leaf01")
        assert r.returncode == 0, r.stderr
    assert healthy["ranks_started"] == [4] and down["status"] == "completed" and down["ranks_started"] == [4]
    assert (down["allreduce"]["channels"], down["allreduce"]["rails_up"]) == ([4], 4)
    assert down["master_addr"] == rails[4]
    # the model, at the same scaled rates, says half the NIC bandwidth: twice the time
    assert down["allreduce"]["predicted"]["time_s"] > 1.9 * healthy["allreduce"]["predicted"]["time_s"]
    assert held(rack) == []


def test_leaf_lost_drill_requeues_the_job_on_the_rails_left(rack: Twin, tmp_path: Path) -> None:
    """ib-leaf01 powered off at step 100 of a running job: the group fails (gloo times out, torchrun's
    store is on rail 0), the job is requeued on the same servers from its checkpoint, on rail 4, and
    completes; the switch is powered on afterwards."""
    res = drill(rack, DRILLS / "real_leaf_lost.yaml", tmp_path)
    assert res["fault"]["kind"] == "switch-down" and res["fault"]["target"] == "ib-leaf01"
    assert [(q["servers"], q["rails_up"]) for q in res["requeued"]] == [(["gpu001", "gpu002", "gpu003"], [4, 5, 6, 7])]
    assert res["allreduce"]["channels"] == [0, 1] and res["allreduce_last"]["channels"] == [4]
    assert res["master_addr"] == "10.100.0.1"   # the first attempt's; the requeued one's was rail 4
    assert held(rack) == []
    from emulator.network import Network
    assert Network.attach(rack.run.path / "network").rails_up("gpu001") == list(range(8))   # powered on again


def test_a_finished_job_is_not_run_again(rack: Twin, tmp_path: Path) -> None:
    """The ranks of a finished job exit cleanly. Without a barrier before tearing the group down, a
    rank's exit aborted in gloo's teardown (std::terminate) in about 1 job in 5, and torchrun ran the
    finished job again from its last checkpoint: six short jobs were almost sure to show it."""
    for i in range(6):
        r = twin(rack, "train", "--real", "--gpus", "4", "--gpus-per-server", "2", "--servers", "gpu001,gpu002",
                 "--steps", "20", "--job-id", f"once{i}", "--checkpoint-dir", str(tmp_path / f"ck{i}"), "--json")
        assert r.returncode == 0, r.stderr[-3000:]
        res = json.loads(r.stdout)
        logs = {p.name: p.read_text() for p in Path(res["workdir"]).glob("gpu*.log")}
        assert res["ranks_started"] == [4], (i, res["attempts"])
        assert not [name for name, text in logs.items() if "terminate called" in text], i
        assert set(res["agent_exit"].values()) == {0}, res["agent_exit"]
