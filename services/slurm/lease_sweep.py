"""Release the twin leases of Slurm jobs that Slurm no longer runs: the Epilog's safety net.

The Epilog (services/slurm/job_leases.py) releases a job's leases when the job ends on a node. It
does not run when slurmd is killed, or when Slurm is stopped under a running job, and the lease model
has no time-to-live: such a lease would hold its GPUs for good. So the Slurm daemon sweeps, every
SWEEP_INTERVAL_S while Slurm runs and once when it stops: a lease whose job id is `slurm-<N>` is
released when job N is not in a state that holds its allocation (running, configuring, completing,
suspended) on that node. A node that Slurm took away (slurmd dead → node DOWN after SlurmdTimeout,
its job requeued or failed) thus gets its GPUs back within SlurmdTimeout and a sweep.

Leases are listed before the queue is read: a job that starts in between is in the queue, so its
fresh lease is never taken for a stale one.
"""

from __future__ import annotations

import logging
import subprocess
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from emulator.errors import TwinRpcError
from emulator.manifest import DaemonEntry, Manifest
from emulator.sdk.gpu_node import GpuNodeClient
from services.slurm.job_leases import PREFIX

log = logging.getLogger("slurm-lease-sweep")
SWEEP_INTERVAL_S = 30.0
HOLDING = "RUNNING,CONFIGURING,COMPLETING,SUSPENDED,STOPPED"   # squeue -t: states that keep the nodes
RPC_TIMEOUT_S = 5.0

Queue = Callable[[], dict[str, set[str]]]   # → job id → the nodes it holds


def slurm_leases(client: GpuNodeClient) -> list[tuple[str, str]]:
    """(lease id, Slurm job id) of the active `slurm-` leases on a server."""
    return [(ls.id, ls.job_id.removeprefix(PREFIX)) for ls in client.leases() if ls.job_id.startswith(PREFIX)]


def holding_jobs(run: Callable[..., subprocess.CompletedProcess]) -> dict[str, set[str]]:
    """Job id → nodes, of the jobs that hold an allocation now (`run`: SlurmCluster.run)."""
    out = run("squeue", "-h", "-t", HOLDING, "-o", "%A|%N", timeout=20).stdout
    jobs: dict[str, set[str]] = {}
    for line in out.splitlines():
        job, _, nodelist = line.partition("|")
        hosts = run("scontrol", "show", "hostnames", nodelist, timeout=20).stdout.split() if nodelist else []
        jobs[job.strip()] = set(hosts)
    return jobs


def sweep(manifest: Manifest, queue: Queue | None) -> list[str]:
    """Release stale `slurm-` leases on every GPU server; `queue` None: Slurm is gone, every one is
    stale. Returns what was released ("gpu001-lease-4 (slurm-7)")."""
    servers = manifest.daemons_of("gpu_node")

    def listed(d: DaemonEntry) -> tuple[DaemonEntry, list[tuple[str, str]]]:
        client = GpuNodeClient(d.name, d.grpc, timeout=RPC_TIMEOUT_S)
        try:
            return d, slurm_leases(client)
        except TwinRpcError as e:   # a server restarting or cut off: next sweep
            log.warning("%s: leases not listed: %s", d.name, e)
            return d, []
        finally:
            client.close()

    with ThreadPoolExecutor(max_workers=min(16, len(servers) or 1)) as pool:
        found = [x for x in pool.map(listed, servers) if x[1]]
    if not found:
        return []
    jobs = queue() if queue is not None else {}
    released = []
    for d, leases in found:
        stale = [(lid, job) for lid, job in leases if d.name not in jobs.get(job, set())]
        if not stale:
            continue
        client = GpuNodeClient(d.name, d.grpc, timeout=RPC_TIMEOUT_S)
        try:
            for lid, job in stale:
                client.release(lid)
                released.append(f"{lid} ({PREFIX}{job})")
        except TwinRpcError as e:
            log.warning("%s: lease not released: %s", d.name, e)
        finally:
            client.close()
    if released:
        log.info("released leases of jobs Slurm no longer runs: %s", ", ".join(released))
    return released
