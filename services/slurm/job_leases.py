"""Slurm's Prolog, Epilog and TaskProlog for the twin: a job holds twin leases on the GPUs Slurm gave it.

    python -m services.slurm.job_leases prolog|epilog|task --run-dir RUN_DIR

On a real cluster the GPUs a Slurm job holds are busy: nvidia-smi lists the job's processes, and
nothing else is placed there. On the twin the GPU-server daemon knows a GPU is in use only by a lease,
so a site's wiring is copied: slurmd runs the Prolog (as root, on every node of the allocation, at
allocation: `PrologFlags=Alloc`) and the Epilog (at job end, whatever the end: completed, failed,
cancelled, preempted, requeued), and they take and release leases on the node's daemon with its
gRPC API (AcquireLease/ReleaseLease, as `twin gpu lease` and the training launcher do). Every lease
of the job is named for it: job id `slurm-<SLURM_JOB_ID>`.

What the program reads (slurmd's prolog environment; docs: slurm.schedmd.com/prolog_epilog.html):
SLURM_JOB_ID, SLURMD_NODENAME, and SLURM_JOB_GPUS, the GRES indexes of the node's `gpu` units the job
was given there. An index is a unit of the node's gres.conf lines in their order (whole GPUs
`nvidia0..7`: index = GPU; a MIG server's typed GRES, one line per profile: the k-th unit of a
profile is the k-th compute instance of that profile in the daemon's order, GPU by GPU).

Choices (README's Slurm section and docs/NVML.md say the same):
- the lease's pid, which NVML reports as the job's process: the prolog runs before the job has a
  process, so the lease starts with the twin's own number; the TaskProlog (slurmstepd runs it in
  each task's process just before that execs the task: the wrapper's $PPID is the task's) sets it to
  the task's (SetLeasePid). The job's newest task on the node holds the lease: the batch script, then
  each step's task as it starts (one pid per lease, not one per rank; a pid may outlive its step);
- a MIG task's CUDA_VISIBLE_DEVICES: slurmd with NVML autodetection sets the MIG UUIDs of the job's
  units (their UniqueId); the twin's slurmd has only gres.conf's device files and would set GRES
  indexes, which name no device. The TaskProlog prints `export CUDA_VISIBLE_DEVICES=MIG-...` naming
  the slices the job's lease holds (`mig_visible`);
- the lease's load is JOB_UTILIZATION (the cluster's jobs are training jobs); a job may report its
  own (ReportLoad on its lease);
- Slurm owns the allocation: a GPU that the twin says someone else holds (a `twin gpu lease`, the
  twin's scheduler) does not stop the job; it is logged and the job's lease covers the others. A
  prolog that failed would drain the node and requeue the job (a failed TaskProlog fails the task),
  so every one of them exits 0;
- an Epilog that never ran (slurmd killed) leaves a lease behind: the Slurm daemon's sweep
  (services/slurm/lease_sweep.py) releases `slurm-` leases of jobs Slurm no longer runs.

Every action goes to stderr, which the wrapper appends to `slurm/log/job-leases-NODE.log`.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import time
from collections import Counter
from pathlib import Path

from emulator.errors import TwinRpcError
from emulator.manifest import Manifest
from emulator.sdk.gpu_node import GpuNodeClient
from services.slurm.config import GPU_TYPE, MIG_TYPE_PREFIX, expand_brackets

PREFIX = "slurm-"
JOB_UTILIZATION = 90
RPC_TIMEOUT_S = 10.0


def lease_job(job_id: str) -> str:
    return f"{PREFIX}{job_id}"


def parse_indexes(value: str) -> list[int]:
    """SLURM_JOB_GPUS: "0,1" (ranges "0-3" read too)."""
    out: list[int] = []
    for part in filter(None, (p.strip() for p in value.split(","))):
        lo, _, hi = part.partition("-")
        out += range(int(lo), int(hi or lo) + 1)
    return out


def node_units(gres_conf: str, node: str) -> list[tuple[str, int]]:
    """The node's GRES units in index order: (type, k-th unit of that type)."""
    units: list[tuple[str, int]] = []
    for line in gres_conf.splitlines():
        fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
        if fields.get("NodeName") == node and fields.get("Name") == "gpu":
            units += [(fields["Type"], k) for k in range(len(expand_brackets(fields["File"])))]
    return units


def wanted(units: list[tuple[str, int]], indexes: list[int]) -> tuple[list[int], dict[str, list[int]]]:
    """(whole GPUs, {MIG profile: [k-th units]}) of the GRES indexes Slurm gave the job."""
    whole: list[int] = []
    mig: dict[str, list[int]] = {}
    for i in indexes:
        if i >= len(units):
            raise ValueError(f"GRES index {i} beyond the node's {len(units)} units")
        gres_type, k = units[i]
        if gres_type == GPU_TYPE:
            whole.append(k)
        else:
            mig.setdefault(gres_type.removeprefix(MIG_TYPE_PREFIX), []).append(k)
    return whole, mig


def mig_gpus(client: GpuNodeClient, profile: str, ks: list[int]) -> Counter[int]:
    """GPU → how many of the `ks`-th compute instances of `profile` (the daemon's order) are on it."""
    on: list[int] = []
    for gpu in client.gpus():
        if gpu.mig_enabled:
            for gi in client.gpu_instances(gpu.index):
                on += [gpu.index for ci in gi.compute_instances if (ci.profile or gi.profile) == profile]
    return Counter(on[k] for k in ks if k < len(on))


def holders(leases: list) -> dict[tuple[int, str], str]:
    """(GPU, MIG UUID or "") → "lease L (job J)" of every active lease on the node."""
    return {(d.gpu, d.uuid if d.is_mig else ""): f"lease {ls.id} (job {ls.job_id})"
            for ls in leases for d in ls.devices}


def take(client: GpuNodeClient, job: str, say, *, gpus: list[int], profile: str = "", count: int = 0) -> None:
    """One lease of `gpus` (or `count` MIG devices of `profile` on them); if the daemon refuses, one
    per GPU, so that what can be held is (a GPU another holds, lost or unhealthy is logged)."""
    try:
        ls = client.lease(job, count=count, gpus=gpus, mig_profile=profile, utilization=JOB_UTILIZATION)
        say(f"leased {_devices(ls)} to {job}: {ls.id}")
        return
    except TwinRpcError as e:
        if len(gpus) == 1:
            say(f"NOT leased to {job}: GPU {gpus[0]}{' ' + profile if profile else ''}: {e.details}")
            return
    for g in gpus:   # whole GPUs only: a MIG request names one GPU
        take(client, job, say, gpus=[g])


def _devices(ls) -> str:  # noqa: ANN001
    return ", ".join(f"GPU {d.gpu}" + (f" {d.mig_profile} GI {d.gi_id} CI {d.ci_id}" if d.is_mig else "")
                     for d in ls.devices)


def prolog(client: GpuNodeClient, job: str, whole: list[int], mig: dict[str, list[int]], say) -> None:
    """Lease what Slurm gave `job` on this node and the job does not hold yet (a prolog run twice)."""
    held = client.leases()
    mine = {d.gpu for ls in held if ls.job_id == job for d in ls.devices if not d.is_mig}
    others = holders(held)
    free = []
    for g in whole:
        if g in mine:
            continue
        if (g, "") in others:   # Slurm owns the allocation: the job runs; the twin says who else holds it
            say(f"CONFLICT: Slurm gave {job} GPU {g}, which the twin has leased to {others[(g, '')]}: "
                f"not leased to {job}")
            continue
        free.append(g)
    if free:
        take(client, job, say, gpus=free)
    if any(ls.job_id == job and any(d.is_mig for d in ls.devices) for ls in held):
        say(f"{job} already holds its MIG devices")
        return
    for profile, ks in mig.items():
        for gpu, n in sorted(mig_gpus(client, profile, ks).items()):
            take(client, job, say, gpus=[gpu], profile=profile, count=n)


def epilog(client: GpuNodeClient, job: str, say) -> int:
    """Release every active lease of `job`; returns how many."""
    mine = [ls for ls in client.leases() if ls.job_id == job]
    for ls in mine:
        client.release(ls.id)
        say(f"released {ls.id} ({_devices(ls)}) of {job}")
    return len(mine)


def task(client: GpuNodeClient, job: str, pid: int, say) -> list:  # noqa: ANN001
    """The TaskProlog: `pid`, the task about to start (the batch script, a step's task), becomes the
    process NVML lists on the job's devices here: the job's newest task holds its GPUs. Returns the
    devices of the job's leases on this node."""
    devices = []
    for ls in client.leases():
        if ls.job_id == job:
            client.set_lease_pid(ls.id, pid)
            say(f"{ls.id} of {job}: pid {pid}")
            devices += list(ls.devices)
    return devices


def mig_visible(units: list[tuple[str, int]], job_indexes: list[int], task_indexes: list[int],
                devices: list) -> list[str]:
    """The MIG UUIDs a task's CUDA_VISIBLE_DEVICES names, as slurmd sets it from NVML autodetection
    (a MIG GRES unit's UniqueId is its MIG UUID; Slurm 21.08+). Which slice is which: the i-th of the
    job's indexes of a profile (in index order) is the i-th MIG device of that profile the job's lease
    holds here (by GPU, GPU instance, compute instance), so the names are of slices the job holds.
    [] for a task with no MIG GRES (whole GPUs keep Slurm's indexes)."""
    held: dict[str, list[str]] = {}
    for d in sorted((d for d in devices if d.is_mig), key=lambda d: (d.gpu, d.gi_id, d.ci_id)):
        held.setdefault(d.mig_profile, []).append(d.uuid)
    nth: dict[int, tuple[str, int]] = {}
    seen: Counter[str] = Counter()
    for i in sorted(set(job_indexes) | set(task_indexes)):
        gres_type = units[i][0] if i < len(units) else GPU_TYPE
        if gres_type != GPU_TYPE:
            profile = gres_type.removeprefix(MIG_TYPE_PREFIX)
            nth[i] = (profile, seen[profile])
            seen[profile] += 1
    return [held[p][k] for p, k in (nth[i] for i in task_indexes if i in nth) if k < len(held.get(p, []))]


def address_of(run_dir: Path, node: str) -> str:
    for d in Manifest.load(run_dir / "manifest.json").daemons_of("gpu_node"):
        if d.name == node:
            return d.grpc
    raise ValueError(f"no GPU server {node!r} in {run_dir / 'manifest.json'}")


def run(role: str, run_dir: Path, env: dict[str, str], say, pid: int = 0) -> None:
    node, job = env.get("SLURMD_NODENAME", ""), lease_job(env.get("SLURM_JOB_ID", ""))
    if not node or job == PREFIX:
        raise ValueError("no SLURMD_NODENAME or SLURM_JOB_ID: slurmd runs this as Prolog/Epilog")
    client = GpuNodeClient(node, address_of(run_dir, node), timeout=RPC_TIMEOUT_S)
    try:
        if role == "epilog":
            if not epilog(client, job, say):
                say(f"{job} held no lease")
            return
        indexes = parse_indexes(env.get("SLURM_JOB_GPUS", ""))
        units = node_units((run_dir / "slurm" / "gres.conf").read_text(), node)
        if role == "task":
            devices = task(client, job, pid, say)
            mine = parse_indexes(env.get("SLURM_STEP_GPUS", "")) or indexes
            if uuids := mig_visible(units, indexes, mine, devices):
                say(f"CUDA_VISIBLE_DEVICES={','.join(uuids)} (GRES {','.join(map(str, mine))})")
                print(f"export CUDA_VISIBLE_DEVICES={','.join(uuids)}", flush=True)   # slurmstepd reads it
            return
        whole, mig = wanted(units, indexes)
        if whole or mig:
            prolog(client, job, whole, mig, say)
    finally:
        client.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m services.slurm.job_leases", description=__doc__.splitlines()[0])
    parser.add_argument("role", choices=("prolog", "epilog", "task"))
    parser.add_argument("--run-dir", type=Path, required=True, help="the twin's run directory")
    parser.add_argument("--pid", type=int, default=0, help="task: the task's pid (the wrapper's $PPID)")
    args = parser.parse_args(argv)
    env = dict(os.environ)
    head = (f"{args.role} {env.get('SLURMD_NODENAME', '?')} job {env.get('SLURM_JOB_ID', '?')} "
            f"SLURM_JOB_GPUS={env.get('SLURM_JOB_GPUS', '')!r}")

    def say(what: str) -> None:
        print(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {head}: {what}", file=sys.stderr, flush=True)

    try:
        run(args.role, args.run_dir, env, say, args.pid)
    except Exception as e:   # noqa: BLE001 - never fail a job (or drain its node) over the twin's bookkeeping
        say(f"FAILED: {type(e).__name__}: {e}")
    return 0


def install(slurm_dir: Path, run_dir: Path) -> dict[str, str]:
    """Write `slurm_dir/prolog.sh`, `epilog.sh` and `task-prolog.sh` and return the slurm.conf lines
    that make slurmd (slurmstepd for the TaskProlog) run them. They run with no PATH and the job's
    SLURM_* environment, so the wrappers carry PATH, the Python that has this project and the run
    directory. A job or task without GPUs has nothing to lease: the wrapper exits before Python starts
    (an array burst of 1000 GPU-less jobs would otherwise start 2000 Pythons)."""
    repo = Path(__file__).resolve().parents[2]
    q = shlex.quote
    lines = {}
    for role, key, gpus in (("prolog", "Prolog", "$SLURM_JOB_GPUS"), ("epilog", "Epilog", "$SLURM_JOB_GPUS"),
                            ("task", "TaskProlog", "$SLURM_JOB_GPUS$SLURM_STEP_GPUS$CUDA_VISIBLE_DEVICES")):
        wrapper = slurm_dir / ("task-prolog.sh" if role == "task" else f"{role}.sh")
        wrapper.write_text(
            "#!/bin/sh\n"
            f"# Generated by `twin slurm up` (services/slurm/job_leases.py): Slurm's {key}.\n"
            f'[ -n "{gpus}" ] || exit 0\n'
            "export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n"
            # this tree's generated protobuf code first: the installed project may be another checkout's
            f"export PYTHONPATH={q(str(repo))}:{q(str(repo / 'protos' / 'gen'))}\n"
            # stdout is the TaskProlog's channel to slurmstepd ("export NAME=value"): only the task's
            # CUDA_VISIBLE_DEVICES goes there, the Prolog's and Epilog's go nowhere.
            # Exit 0 whatever Python did: a failed Prolog drains the node, a failed TaskProlog fails the task.
            f"{q(sys.executable)} -m services.slurm.job_leases {role} --run-dir {q(str(run_dir))} "
            # slurmstepd runs the TaskProlog from the task's process, before that execs the task
            + ('--pid "$PPID" ' if role == "task" else "")
            + ("</dev/null " if role == "task" else "</dev/null >/dev/null ") +
            f"2>>{q(str(slurm_dir / 'log'))}/job-leases-\"$SLURMD_NODENAME\".log\n"
            "exit 0\n")
        wrapper.chmod(0o755)
        lines[key] = str(wrapper)
    # At allocation, on every node of it (by default only where a step starts, and only then).
    lines["PrologFlags"] = "Alloc"
    return lines


if __name__ == "__main__":
    sys.exit(main())
