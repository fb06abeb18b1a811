"""`twin slurm up` on a `--network netns` twin: slurmctld runs in the management host's namespace on
its OOB address, each slurmd in its GPU server's namespace with NodeAddr = the server's OOB address;
the client commands, run from the machine's own namespace, reach slurmctld through the operator port;
a two-node job runs to completion; `twin down` leaves no Slurm process and no namespace."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from emulator.manifest import Manifest
from emulator.process import Cgroup
from emulator.rundir import RunDir
from tests.conftest import netns_skip_reason
from tests.slurm.conftest import REASON as SLURM_REASON
from tests.slurm.conftest import wait_for
from tests.slurm.test_slurm_twin import slurm_processes, twin_cli


def _why_skip() -> str:
    if SLURM_REASON:
        return SLURM_REASON
    return netns_skip_reason("Slurm on --network netns")


def slurm(run_dir: Path, *argv: str, timeout: float = 30) -> str:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=True, cwd=run_dir,
                          env=dict(os.environ, SLURM_CONF=str(run_dir / "slurm" / "slurm.conf"))).stdout


@pytest.fixture(scope="module")
def netns_slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Manifest]]:
    if reason := _why_skip():
        pytest.skip(reason)
    run_dir = tmp_path_factory.mktemp("slurm-netns")
    twin_cli("up", "rack", "--network", "netns", "--run-dir", str(run_dir), timeout=60)
    manifest = RunDir(run_dir).load_manifest()
    prefix = f"ct{manifest.slot}-"
    cgroup = None
    try:
        twin_cli("slurm", "up", "--run-dir", str(run_dir), timeout=60)
        cgroup = Cgroup.load(run_dir / "slurm" / "cgroup")   # daemons, slurmstepd, job processes
        yield run_dir, manifest
    finally:
        twin_cli("down", "--run-dir", str(run_dir), check=False, timeout=60)
    assert not slurm_processes(run_dir), "twin down left Slurm processes behind"
    assert cgroup is None or not cgroup.path.exists(), f"twin down left Slurm processes behind: {cgroup.pids()}"
    names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
    assert not [n for n in names if n.startswith(prefix)], "twin down left namespaces behind"


def _netns_inode(pid_or_name: int | str) -> int:
    path = f"/proc/{pid_or_name}/ns/net" if isinstance(pid_or_name, int) else f"/run/netns/{pid_or_name}"
    return os.stat(path).st_ino


def test_every_node_idle_from_the_machines_namespace(netns_slurm: tuple[Path, Manifest]) -> None:
    run_dir, manifest = netns_slurm
    servers = {d.name: d for d in manifest.daemons_of("gpu_node")}
    rows = slurm(run_dir, "sinfo", "-h", "-N", "-p", "regression", "-o", "%N|%T").split()
    assert dict(r.split("|") for r in rows) == {n: "idle" for n in servers}
    conf = (run_dir / "slurm" / "slurm.conf").read_text()
    assert f"SlurmctldHost={os.uname().nodename}({manifest.management.addresses['oob']})" in conf
    for name, d in servers.items():
        assert re.search(rf"^NodeName={name} NodeAddr={re.escape(d.addresses['oob'])} ", conf, re.M)


def test_daemons_run_in_their_hosts_namespaces(netns_slurm: tuple[Path, Manifest]) -> None:
    run_dir, manifest = netns_slurm
    pids = json.loads((run_dir / "slurm" / "state.json").read_text())["pids"]
    assert _netns_inode(pids["slurmctld"]) == _netns_inode(str(manifest.management.netns))
    assert _netns_inode(pids["slurmctld"]) != _netns_inode(os.getpid())
    for d in manifest.daemons_of("gpu_node"):
        pid = pids[f"slurmd-{d.name}"]
        assert Path(f"/proc/{pid}/comm").read_text().strip() == "slurmd"
        assert _netns_inode(pid) == _netns_inode(str(d.netns)), f"slurmd of {d.name} not in {d.netns}"


def test_a_two_node_job_runs_to_completion(netns_slurm: tuple[Path, Manifest]) -> None:
    run_dir, manifest = netns_slurm
    netns = {d.name: str(d.netns) for d in manifest.daemons_of("gpu_node")}
    out = slurm(run_dir, "srun", "-N2", "-p", "regression", "--gres=gpu:h100:8", "sh", "-c",
                "echo $SLURMD_NODENAME $(stat -L -c %i /proc/self/ns/net)", timeout=60)
    ran = dict(ln.split() for ln in out.splitlines())
    assert len(ran) == 2, out
    for node, inode in ran.items():   # each task ran in its node's namespace
        assert int(inode) == _netns_inode(netns[node]), f"{node}'s task not in {netns[node]}"
    job = slurm(run_dir, "sbatch", "--parsable", "-N2", "--wrap", "srun hostname").strip()
    wait_for(lambda: not slurm(run_dir, "squeue", "-h", "-j", job), 45, f"job {job} to finish")
    state = slurm(run_dir, "scontrol", "show", "job", job)
    assert "JobState=COMPLETED" in state, state


def _events(path: Path) -> list[dict]:
    try:
        return [json.loads(x) for x in path.read_text().splitlines() if x.strip().endswith("}")]
    except FileNotFoundError:
        return []


def _second_gpu_of_second_node(run_dir: Path, job: str) -> tuple[str, int]:
    """The job's second node and the second GPU Slurm gave it there, from `scontrol show job -d`
    ("Nodes=gpu[001-002] ... GRES=gpu:h100:2(IDX:0-1)", a line per distinct allocation)."""
    per_node = {}
    for hosts, idx in re.findall(r"Nodes=(\S+) .*?GRES=gpu:h100:2\(IDX:([^)]*)\)",
                                 slurm(run_dir, "scontrol", "show", "job", "-d", job)):
        gpus = [g for part in idx.split(",") for g in (range(int(part.split("-")[0]), int(part.split("-")[-1]) + 1))]
        for host in slurm(run_dir, "scontrol", "show", "hostnames", hosts).split():
            per_node[host] = gpus
    assert len(per_node) == 2, per_node
    node = sorted(per_node)[1]
    return node, per_node[node][1]


def test_real_ranks_under_slurm_stop_on_a_lost_gpu_and_the_job_is_requeued(
        netns_slurm: tuple[Path, Manifest], tmp_path: Path) -> None:
    """`twin slurm train-script --real`: srun starts torchrun in each allocated node's namespace, one rank
    per GPU Slurm gave the job (its CUDA_VISIBLE_DEVICES), rendezvous on the batch host's rail 0. Xid 79
    on a GPU of the second node: that rank's NVML check answers GPU_IS_LOST and it stops, srun ends the
    step, the script requeues the job, the node health check has drained the node, and the next attempt
    resumes from the last checkpoint on other nodes and completes."""
    from emulator.client import Twin

    run_dir, _ = netns_slurm
    script = tmp_path / "real.sbatch"
    twin_cli("slurm", "train-script", "--real", "-N", "2", "--gpus-per-node", "2", "--job-name", "real",
             "--checkpoint-every", "20", "--checkpoint-root", str(tmp_path / "ck"), "-o", str(script),
             "--run-dir", str(run_dir))
    job = slurm(run_dir, "sbatch", "--parsable", f"--chdir={tmp_path}", str(script), "--steps", "400",
                "--step-sleep", "0.05").strip()
    events = tmp_path / "ck" / f"real-{job}" / "events.jsonl"
    wait_for(lambda: any(e["kind"] == "checkpoint" for e in _events(events)), 120, "the job's first checkpoint")
    node, gpu = _second_gpu_of_second_node(run_dir, job)
    twin = Twin.connect(run_dir)
    twin.gpu_node(node).inject_xid(gpu, 79)
    try:
        wait_for(lambda: "JobState=COMPLETED" in slurm(run_dir, "scontrol", "show", "job", job), 240,
                 f"job {job} to be requeued and complete")
        log = (tmp_path / f"slurm-real-{job}.out").read_text()
        evs = _events(events)
        (lost,) = [e for e in evs if e["kind"] == "gpu_lost"]
        assert (lost["server"], lost["local_rank"]) == (node, 1)
        assert lost["error"] == "GPU 1: GPU is lost (NVML_ERROR_GPU_IS_LOST)"
        starts = [e for e in evs if e["kind"] == "started"]
        assert [s["world"] for s in starts] == [4, 4] and {s["nvml"] for s in starts} == {"on"}
        assert all(s["master"].startswith("10.100.") for s in starts)   # a compute rail
        assert starts[1]["resumed_from"] in [e["step"] for e in evs if e["kind"] == "checkpoint"]
        assert evs[-1]["kind"] == "finished" and evs[-1]["step"] == 400
        assert "requeueing job" in log and "attempt 1 on" in log
        second = log.split("attempt 1 on ")[1].split(":")[0]
        assert node not in slurm(run_dir, "scontrol", "show", "hostnames", second).split()
        reason = slurm(run_dir, "sinfo", "-h", "-R", "-n", node, "-o", "%E")
        assert reason.startswith(f"Xid 79 on GPU {gpu}"), reason
    finally:   # only a reboot brings a lost GPU back; the health check then resumes the node
        twin.gpu_node(node).reboot()
