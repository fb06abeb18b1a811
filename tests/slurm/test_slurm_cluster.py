"""The real Slurm 22.05 daemons on the `rack` twin's four GPU servers (one MIG): nodes, partitions,
GRES, job launch, gang placement and partition-priority preemption by requeue."""

from __future__ import annotations

import re

from services.slurm.cluster import SlurmCluster
from tests.slurm.conftest import needs_slurm, wait_for

pytestmark = needs_slurm

NODES = ["gpu001", "gpu002", "gpu003", "gpu004"]
MIG_GRES = ("gpu:nvidia_h100_80gb_hbm3_1g.10gb:16,gpu:nvidia_h100_80gb_hbm3_2g.20gb:8,"
            "gpu:nvidia_h100_80gb_hbm3_3g.40gb:8")


def submit(slurm: SlurmCluster, *args: str) -> str:
    out = slurm.run("sbatch", "--parsable", *args).stdout.strip()
    return out.split(";")[0]


def job(slurm: SlurmCluster, job_id: str) -> dict[str, str]:
    """`scontrol show job` as a dict (the first value of every Key=Value)."""
    text = slurm.run("scontrol", "-o", "show", "job", job_id).stdout
    return dict(re.findall(r"(\w+)=(\S*)", text))


def wait_state(slurm: SlurmCluster, job_id: str, state: str, timeout: float = 20) -> dict[str, str]:
    return wait_for(lambda: (j := job(slurm, job_id))["JobState"] == state and j, timeout,
                    f"job {job_id} {state}")


def test_sinfo_lists_every_server_in_its_partitions_with_gpu_gres(slurm: SlurmCluster) -> None:
    rows = slurm.run("sinfo", "-h", "-N", "-o", "%N|%P|%T|%G|%c|%m").stdout.split()
    seen: dict[str, set[str]] = {}
    for row in rows:
        node, part, state, gres, cpus, mem = row.split("|")
        assert state == "idle" and cpus == "224" and int(mem) >= 2_000_000
        assert gres == (MIG_GRES if node == "gpu004" else "gpu:h100:8"), (node, gres)
        seen.setdefault(node, set()).add(part.rstrip("*"))
    assert sorted(seen) == NODES
    for node in NODES:
        expected = {"exploratory", "regression"} | ({"dev"} if node == "gpu004" else set())
        assert seen[node] == expected, node
    default = slurm.run("sinfo", "-h", "-o", "%P").stdout.split()
    assert "exploratory*" in default


def test_srun_runs_on_two_nodes_and_sbatch_completes(slurm: SlurmCluster, tmp_path) -> None:
    r = slurm.run("srun", "-N2", "--gres=gpu:h100:1", "bash", "-c",
                  "echo $SLURMD_NODENAME $CUDA_VISIBLE_DEVICES", timeout=30)
    lines = sorted(r.stdout.split("\n")[:-1])
    assert len(lines) == 2 and len({ln.split()[0] for ln in lines}) == 2, r.stdout
    assert all(ln.split()[0] in NODES for ln in lines)
    assert all(ln.split()[1:] == ["0"] for ln in lines), r.stdout   # each rank sees the one GPU it was given

    out = tmp_path / "hostname.out"
    job_id = submit(slurm, "-N1", f"--output={out}", "--wrap", "hostname")
    wait_state(slurm, job_id, "COMPLETED")
    assert out.read_text().strip() == slurm.config.hostname


def test_a_job_sees_only_the_gpus_slurm_gave_it(slurm: SlurmCluster, tmp_path) -> None:
    """Two jobs share a server: each one's CUDA_VISIBLE_DEVICES names its own GPUs, as Slurm's
    gres/gpu sets it from the GRES it allocated (gres.conf's File= device nodes)."""
    out = tmp_path / "first.out"
    first = submit(slurm, "-w", "gpu001", "--gres=gpu:h100:5", f"--output={out}", "--wrap",
                   "echo $CUDA_VISIBLE_DEVICES; sleep 30")
    try:
        wait_state(slurm, first, "RUNNING")
        r = slurm.run("srun", "-w", "gpu001", "--gres=gpu:h100:3", "bash", "-c", "echo $CUDA_VISIBLE_DEVICES",
                      timeout=30)
        assert r.stdout.strip() == "5,6,7", r.stdout
        wait_for(lambda: out.exists() and out.read_text().strip(), 10, "the first job's output")
        assert out.read_text().strip() == "0,1,2,3,4"
    finally:
        slurm.run("scancel", first)


def test_mig_slices_are_requestable_as_typed_gres(slurm: SlurmCluster) -> None:
    r = slurm.run("srun", "-p", "dev", "--gres=gpu:nvidia_h100_80gb_hbm3_1g.10gb:2", "bash", "-c",
                  "echo $SLURMD_NODENAME", timeout=30)
    assert r.stdout.strip() == "gpu004"


def test_more_nodes_than_exist_is_rejected(slurm: SlurmCluster) -> None:
    r = slurm.run("sbatch", "-N5", "--wrap", "hostname", check=False)
    assert r.returncode != 0
    assert "Node count specification invalid" in r.stderr, r.stderr
    assert not slurm.run("squeue", "-h").stdout.strip()


def test_gang_job_waits_takes_nothing_then_starts_on_all_at_once(slurm: SlurmCluster) -> None:
    blocker = submit(slurm, "-N1", "-w", "gpu001", "--exclusive", "--wrap", "sleep 300")
    wait_state(slurm, blocker, "RUNNING")
    gang = submit(slurm, "-N4", "--exclusive", "--gres=gpu:1", "--wrap", "sleep 300")
    j = wait_for(lambda: (j := job(slurm, gang))["Reason"] == "Resources" and j, 20,
                 "the gang job to wait on Resources")
    assert j["JobState"] == "PENDING"
    # It takes nothing while waiting: the three other servers stay idle.
    states = slurm.node_states()
    assert states["gpu001"] == "allocated"
    assert {states[n] for n in NODES[1:]} == {"idle"}, states

    slurm.run("scancel", blocker)
    j = wait_state(slurm, gang, "RUNNING", timeout=30)
    assert j["NumNodes"] == "4" and j["NodeList"] == "gpu[001-004]"
    assert set(slurm.node_states().values()) == {"allocated"}


def test_regression_preempts_exploratory_by_requeue(slurm: SlurmCluster) -> None:
    low = submit(slurm, "-p", "exploratory", "-N4", "--exclusive", "--requeue",
                 "--wrap", "sleep 300")
    wait_state(slurm, low, "RUNNING")
    high = submit(slurm, "-p", "regression", "-N1", "--exclusive", "--wrap", "sleep 300")
    wait_state(slurm, high, "RUNNING", timeout=30)
    j = wait_for(lambda: (j := job(slurm, low))["JobState"] in ("PENDING", "REQUEUED") and j, 20,
                 "the exploratory job to be requeued")
    assert int(j["Restarts"]) >= 1, j
    assert j["JobState"] in ("PENDING", "REQUEUED")
