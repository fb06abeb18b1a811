"""`twin train`: the seed's 3D-parallel training job on the twin's GPU servers (workloads/train).

Exit status: 0 when it completes, 1 when it fails as a real job fails (a fatal Xid on one of its
GPUs, its fabric paths lost: the reason is printed), 2 on bad input (nothing leased or written),
143 when it is terminated (SIGTERM: Slurm preempting or cancelling it; its leases are released
first, its last complete checkpoint stays, `--resume` continues from it).

`--result-file` writes the run's result (JSON, the same as `--json` prints) when it ends, whichever
way: what a scheduler-driven drill reads back from each attempt of a Slurm job.
"""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path
from typing import Annotated, Any

import typer

from emulator.cli.common import DEFAULT, RunDirOption, connect, console, err_console, fail, user_errors
from workloads.train.config import TrainConfig, TrainConfigError
from workloads.train.real_cli import main_real
from workloads.train.result_file import write_result as _write_result
from workloads.train.runner import TrainError, TrainJob

TERMINATED = 143  # 128 + SIGTERM, as a shell reports a job killed by it

# `--real` (issue 18): real torchrun ranks instead of the model, run by workloads/train/real_cli.py.
RealOption = Annotated[bool, typer.Option("--real", help="Run real torchrun ranks (PyTorch, gloo) in the GPU servers' "
                                          "namespaces instead of the model: --gpus ranks, --gpus-per-server on each "
                                          "(docs/TRAIN_REAL.md).")]
GpusPerServerOption = Annotated[int, typer.Option(help="--real: GPUs leased (ranks) per server.")]
MigProfileOption = Annotated[str, typer.Option(help="--real: the MIG device profile leased on a server in MIG mode, "
                                               "one rank per device (default 1g.10gb; e.g. 2g.20gb, 3g.40gb).")]


class Terminated(BaseException):
    """SIGTERM (Slurm preempts or cancels the job): unwind, so that the leases are released."""


def _terminate(signum: int, _frame: object) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # srun repeats it: the first one unwinds, the rest must not
    raise Terminated(signal.Signals(signum).name)


def train(
    ctx: typer.Context,
    gpus: Annotated[int, typer.Option(help="GPUs (whole servers of 8).")] = 1024,
    tp: Annotated[int, typer.Option(help="Tensor parallel size (inside a server).")] = 8,
    pp: Annotated[int, typer.Option(help="Pipeline parallel size (across servers).")] = 4,
    dp: Annotated[int, typer.Option(help="Data parallel size: derived as gpus/(tp·pp); if given it must agree.")] = 0,
    params: Annotated[float, typer.Option(help="Model parameters, e.g. 70e9.")] = 70e9,
    steps: Annotated[int, typer.Option(help="Train up to this global step.")] = 1000,
    global_batch: Annotated[int, typer.Option(help="Sequences per step.")] = 1024,
    seq_len: Annotated[int, typer.Option(help="Tokens per sequence.")] = 4096,
    mfu: Annotated[float, typer.Option(help="Model-FLOPs utilisation the compute model assumes.")] = 0.4,
    checkpoint_every: Annotated[int, typer.Option(help="Checkpoint every N steps (0: never).")] = 0,
    checkpoint_dir: Annotated[Path | None, typer.Option(help="Where checkpoints are written (real files).")] = None,
    checkpoint_scale: Annotated[float, typer.Option(help="Stand-in bytes written = modelled bytes × this.")] = 1e-9,
    storage_gbps: Annotated[float, typer.Option(help="Checkpoint write bandwidth, GB/s (modelled).")] = 100.0,
    checkpoint_storage: Annotated[str, typer.Option(help="How the checkpoint write time is modelled: bandwidth "
                                                    "(bytes / --storage-gbps) or lustre (the Lustre model with the "
                                                    "twin's live OSS/OST faults).")] = "bandwidth",
    checkpoint_stripe_count: Annotated[int, typer.Option(help="Stripe count the Lustre model writes with.")] = 4,
    dataset: Annotated[Path | None, typer.Option(help="Dataset directory (e.g. staged into the Lustre mount): "
                                                 "files sampled from it are read before each step.")] = None,
    dataset_reads_per_step: Annotated[int, typer.Option(help="Dataset files read per step.")] = 1,
    time_scale: Annotated[float, typer.Option(help="Modelled seconds per wall second (0: unpaced).")] = 1000.0,
    job_id: Annotated[str, typer.Option(help="Job id: lease owner and bus topic.")] = "train",
    servers: Annotated[str, typer.Option(help="Comma-separated GPU servers (default: the first that fit).")] = "",
    take_mig: Annotated[bool, typer.Option(help="Reconfigure MIG servers to whole GPUs when picked.")] = False,
    resume: Annotated[bool, typer.Option(help="Continue from the last complete checkpoint.")] = False,
    reclaim_leases: Annotated[bool, typer.Option(help="First release leases this job id still holds on its "
                                                 "servers (a previous attempt killed before it could).")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    result_file: Annotated[Path | None, typer.Option(help="Write the result (JSON) here when the run ends, "
                                                      "also when it fails or is terminated.")] = None,
    real: RealOption = False,
    gpus_per_server: GpusPerServerOption = 2,
    mig_profile: MigProfileOption = "",
    run_dir: RunDirOption = DEFAULT,
) -> None:
    """Run the training workload: leases its GPUs, steps through modelled time, checkpoints, feels faults."""
    if real or mig_profile:  # --real: workloads/train/real_cli.py (issue 18); --mig-profile alone is refused
        return main_real(ctx.params) if real else fail("--mig-profile is for --real jobs: the model leases whole "
                                                       "GPUs (--take-mig reconfigures MIG servers)")
    try:
        cfg = TrainConfig(gpus=gpus, tp=tp, pp=pp, params=params, steps=steps, global_batch=global_batch,
                          seq_len=seq_len, mfu=mfu, checkpoint_every=checkpoint_every,
                          checkpoint_scale=checkpoint_scale, storage_gbps=storage_gbps, time_scale=time_scale,
                          checkpoint_storage=checkpoint_storage, checkpoint_stripe_count=checkpoint_stripe_count,
                          dataset=str(dataset.resolve()) if dataset else "",
                          dataset_reads_per_step=dataset_reads_per_step,
                          job_id=job_id, servers=tuple(s for s in servers.split(",") if s))
    except TrainConfigError as e:
        fail(str(e))
    if dataset is not None and not dataset.is_dir():
        fail(f"--dataset {dataset}: not a directory")
    if dp and dp != cfg.dp:
        fail(f"--dp {dp} disagrees with --gpus {gpus} / (tp {tp} × pp {pp}) = {cfg.dp}")
    twin = connect(run_dir)
    out = err_console if as_json else console

    def say(message: str) -> None:
        out.print(message, highlight=False)

    say(_intro(cfg))
    signal.signal(signal.SIGTERM, _terminate)
    job = None
    wall0, started_at = time.monotonic(), time.time()
    with user_errors():
        try:
            job = TrainJob(cfg, twin, checkpoint_dir, resume=resume, take_mig=take_mig, log=say,
                           reclaim=reclaim_leases)
            result = job.run()
        except TrainError as e:
            _write_result(result_file, {"status": "refused", "reason": str(e), "job_id": job_id})
            fail(str(e))
        except Terminated as e:
            doc = _terminated(job, job_id, str(e), wall0, started_at)
            _write_result(result_file, doc)
            err_console.print(f"[bold yellow]job terminated:[/] {e} after step {doc['last_step']}; leases released; "
                              "resume with --resume", highlight=False)
            raise typer.Exit(TERMINATED) from None
    _finish(result, result_file, started_at, as_json)


def _finish(result: Any, result_file: Path | None, started_at: float, as_json: bool) -> None:
    """The model's result: written, printed, exit 1 when the job failed (out of train(): its length)."""
    _write_result(result_file, result.as_dict() | {"wall_started_at": started_at})
    if as_json:
        console.print_json(json.dumps(result.as_dict()))
    if result.status != "completed":
        err_console.print(f"[bold red]job failed:[/] {result.reason} (after step {result.last_step}; resume with "
                          f"--resume)", highlight=False)
        raise typer.Exit(1)


def _intro(cfg: TrainConfig) -> str:
    return (f"job {cfg.job_id}: {cfg.params:.3g} params, {cfg.gpus} GPUs = TP {cfg.tp} × PP {cfg.pp} × DP {cfg.dp}; "
            f"every time printed is modelled (H100 {cfg.peak_tflops:g} TFLOPS × MFU {cfg.mfu:g}; collectives from the "
            f"fabric model), paced at {cfg.time_scale:g} modelled s per wall s")


def _terminated(job: TrainJob | None, job_id: str, signal_name: str, wall0: float, started_at: float) -> dict:
    """The result of a run SIGTERM ended (job None: before it was made), from what it got to."""
    events = job.events if job is not None else []
    steps = [e.get("step") for e in events if e["kind"] in ("start", "checkpoint", "resumed")]
    return {"status": "terminated", "reason": f"{signal_name} (preempted or cancelled)",
            "job_id": job_id, "last_step": job.last_step if job is not None else None,
            "servers": job.servers if job else [],
            "checkpoints": [e["step"] for e in events if e["kind"] == "checkpoint"], "events": events,
            "first_step": (steps[0] + 1) if steps else None,
            "modelled_s": job.modelled_t if job is not None else 0.0,
            "resumed_from": next((x["step"] for x in events if x["kind"] == "resumed"), None),
            "wall_s": time.monotonic() - wall0, "wall_started_at": started_at}
