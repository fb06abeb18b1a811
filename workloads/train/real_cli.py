"""`twin train --real`: where the real job keeps its files, running it, and its result.

Checkpoints go to the twin's Lustre mount when it has one (`<mount>/checkpoints/<job>`), else to
the run directory, and the result says which (`checkpoint_storage`). A directory that already holds
checkpoints is only used with `--resume`. A network fault raised while the job ran (the twin's fault
log: `twin net fault cut gpu003` from another shell, or a drill's), or a GPU fault on one of its
servers (an Xid 79 its rank's NVML health check finds), gives the time from that fault to training
resumed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from workloads.train.real_figures import figures
from workloads.train.real_launch import RealJob, RealOptions, RealTrainError
from workloads.train.result_file import write_result as _write_result


def lustre_mount(twin: Any) -> str | None:
    if twin.manifest.section("lustre") is None:
        return None
    from services.lustre.client.mount import records

    recs = records(twin.run.path)
    return recs[0]["mountpoint"] if recs else None


def checkpoint_place(twin: Any, given: Path | None, job_id: str) -> tuple[Path, str]:
    """(checkpoint directory, what storage it is on, said plainly)."""
    mount = lustre_mount(twin)
    if given is not None:
        p = given.resolve()
        on = mount and (str(p) + "/").startswith(mount.rstrip("/") + "/")
        return p, f"lustre ({mount})" if on else "local disk (not under this twin's Lustre mount)"
    if mount:
        return Path(mount) / "checkpoints" / job_id, f"lustre ({mount})"
    why = ("the twin has Lustre but nothing mounts it (`twin lustre mount DIR`)"
           if twin.manifest.section("lustre") is not None else "the twin has no Lustre (`twin up --lustre`)")
    return twin.run.path / "train-real" / job_id / "checkpoints", f"local disk: {why}"


def fault_during(twin: Any, t0: float, t1: float, servers: list[str]) -> dict[str, Any] | None:
    """The first fault raised between t0 and t1 (wall clock): a network fault from the twin's fault log,
    or a GPU fault on one of the job's servers (an Xid: `twin fault inject gpu003 --gpu 1 --xid 79`)."""
    hits = []
    try:
        hits += [{"id": f.id, "kind": f.kind, "target": f.target, "t": f.time}
                 for f in twin.network().faults(include_cleared=True)]
    except Exception:  # no fault log to read: the run's figures just lack the fault's
        pass
    for s in servers:
        try:
            gpu_faults = twin.gpu_node(s).faults(include_cleared=True)
        except Exception:  # a cut-off server's API is unreachable
            continue
        hits += [{"id": f.id, "kind": f"xid-{f.xid}" if f.xid else "gpu-fault", "target": f"{s} GPU {f.gpu}",
                  "t": f.injected_at} for f in gpu_faults]   # (twin time: wall time unless the clock is scaled)
    hits = sorted((h for h in hits if t0 <= h["t"] <= t1), key=lambda h: h["t"])
    return hits[0] if hits else None


def run_real(twin: Any, opts: RealOptions, checkpoint_dir: Path | None, *, resume: bool = False,
             log: Callable[[str], None] | None = None,
             on_poll: Callable[[RealJob, list[dict[str, Any]]], None] | None = None) -> dict[str, Any]:
    ckdir, storage = checkpoint_place(twin, checkpoint_dir, opts.job_id)
    if not resume and ckdir.is_dir() and any(ckdir.glob("step-*.pt")):
        raise RealTrainError(f"{ckdir} holds checkpoints of an earlier run: --resume to continue from them, "
                             "or another --checkpoint-dir")
    opts.checkpoint_dir = str(ckdir)
    workdir = twin.run.path / "train-real" / f"{opts.job_id}-{int(time.time() * 1000)}"
    job = RealJob(twin, opts, workdir, log)
    run = job.run(on_poll)
    fault = fault_during(twin, run["started_at"], run["ended_at"], run["servers"])
    figs = figures(run, opts.per_server, job.bandwidth_scale, fault["t"] if fault else None)
    status = "completed" if run["outcome"] == "completed" else "failed"
    return {"status": status, "outcome": run["outcome"], "job_id": opts.job_id, "real": True,
            "servers": run["servers"], "ranks_leased": run["ranks_leased"], "mig": run["mig"],
            "master_addr": run["master_addr"],
            "checkpoint_dir": str(ckdir), "checkpoint_storage": storage, "bandwidth_scale": job.bandwidth_scale,
            "fault": fault, **figs, "requeued": run["requeued"], "agent_exit": run["agent_exit"],
            "not_released": run["not_released"],
            "wall_s": run["ended_at"] - run["started_at"], "workdir": run["workdir"]}


def summary(r: dict[str, Any]) -> list[str]:
    lines = [f"job {r['job_id']} (real, torchrun + gloo): {r['status']} at step {r['last_step']}; ranks started "
             f"{r['ranks_started']} on {', '.join(r['servers'])}; MASTER_ADDR {r['master_addr']}",
             f"checkpoints {r['checkpoints']} in {r['checkpoint_dir']} ({r['checkpoint_storage']})"]
    if r.get("mig"):
        lines.append("MIG devices: " + ", ".join(f"{s} {p}" for s, p in r["mig"].items()) + " (one rank each)")
    if r.get("nvml"):
        lines.append(f"ranks' NVML health check: {r['nvml']}")
    if r.get("dataset_files"):
        lines.append(f"dataset: {r['dataset_files']} files read as the ranks' inputs")
    if r.get("steps_per_s"):
        lines.append(f"steps/s {r['steps_per_s']:.1f} (measured, wall clock)")
    ar = r.get("allreduce")
    if ar and ar.get("measured_over_predicted"):
        p = ar["predicted"]
        over = (f" over rails {', '.join(map(str, ar['channels']))} ({ar['rails_up']} of 8 up)"
                if ar.get("channels") else "")
        lines.append(f"all-reduce {ar['bytes']} B over {ar['ranks']} ranks{over}: measured "
                     f"{ar['measured_s'] * 1e3:.1f} ms, model {p['time_s'] * 1e3:.1f} ms ({p['bottleneck']}, "
                     f"NIC {p['nic_gbps']:.3g} GB/s): ratio {ar['measured_over_predicted']:.2f}")
    for e in r.get("gpu_lost") or []:
        lines.append(f"rank {e['rank']} on {e['server']} (local rank {e['local_rank']}) stopped: {e['error']}")
    for q in r.get("requeued") or []:
        why = (f"drained: {', '.join(q['drained'])}" if q["drained"] else
               f"the compute rails up changed to {q.get('rails_up')}")
        lines.append(f"requeued on {', '.join(q['servers'])} from the last checkpoint ({why})")
    if r.get("fault"):
        f, s = r["fault"], r.get("fault_to_resumed_s")
        lines.append(f"fault {f['id']} {f['kind']} {f['target']}: " + (
            f"training resumed from step {r['resumed_from_step']} after {s:.1f} s" if s is not None
            else "training did not resume"))
    if r["status"] != "completed":
        lines.append(f"failed: {r['outcome']} (agent logs in {r['workdir']})")
    return lines


def main_real(p: dict[str, Any]) -> None:
    """`twin train --real ...` with the command's options `p` (wired from cli.py): bad input changes
    nothing; exit 1 when the job fails. Of the model's options it uses gpus, steps, checkpoint_every,
    checkpoint_dir, dataset, servers, job_id, resume, json, result_file; and mig_profile, its own."""
    import typer

    from emulator.cli.common import connect, console, err_console, fail, user_errors
    from services.gpu_node.mig import device_profile_names

    gpus, per_server, steps, checkpoint_every = p["gpus"], p["gpus_per_server"], p["steps"], p["checkpoint_every"]
    checkpoint_dir, dataset, servers, job_id = p["checkpoint_dir"], p["dataset"], p["servers"], p["job_id"]
    resume, as_json, result_file, run_dir = p["resume"], p["as_json"], p["result_file"], p["run_dir"]
    mig_profile = p.get("mig_profile") or RealOptions.mig_profile

    if per_server < 1 or gpus < per_server or gpus % per_server:
        fail(f"--gpus {gpus} is not a whole number of servers of --gpus-per-server {per_server}")
    if steps < 1 or checkpoint_every < 0:
        fail("--steps must be >= 1 and --checkpoint-every >= 0")
    if dataset is not None and not dataset.is_dir():
        fail(f"--dataset {dataset}: not a directory")
    valid = device_profile_names()
    if mig_profile not in valid:
        fail(f"--mig-profile {mig_profile!r}: not an H100 MIG device profile; valid: {', '.join(valid)}")
    names = tuple(s for s in servers.split(",") if s)
    if names and len(names) * per_server != gpus:
        fail(f"--servers names {len(names)} servers: {len(names) * per_server} GPUs at {per_server} each, not {gpus}")
    twin = connect(run_dir)
    out = err_console if as_json else console
    opts = RealOptions(steps=steps, per_server=per_server, servers=names, nodes=gpus // per_server,
                       checkpoint_every=checkpoint_every, dataset=str(dataset.resolve()) if dataset else "",
                       job_id=job_id, mig_profile=mig_profile)
    with user_errors():
        try:
            r = run_real(twin, opts, checkpoint_dir, resume=resume, log=lambda m: out.print(m, highlight=False))
        except RealTrainError as e:
            _write_result(result_file, {"status": "refused", "reason": str(e), "job_id": job_id, "real": True})
            fail(str(e))
    _write_result(result_file, r)
    if as_json:
        console.print_json(json.dumps(r, default=str))
    else:
        for line in summary(r):
            console.print(line, highlight=False)
    if r["status"] != "completed":
        raise typer.Exit(1)
