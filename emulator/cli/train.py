"""`twin train`: the seed's 3D-parallel training job on the twin's GPU servers (services/train).

Exit status: 0 when it completes, 1 when it fails as a real job fails (a fatal Xid on one of its
GPUs, its fabric paths lost: the reason is printed), 2 on bad input (nothing leased or written).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from emulator.cli.common import DEFAULT, RunDirOption, connect, console, err_console, fail, user_errors
from services.train.config import TrainConfig, TrainConfigError
from services.train.runner import TrainError, TrainJob


def train(
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
    time_scale: Annotated[float, typer.Option(help="Modelled seconds per wall second (0: unpaced).")] = 1000.0,
    job_id: Annotated[str, typer.Option(help="Job id: lease owner and bus topic.")] = "train",
    servers: Annotated[str, typer.Option(help="Comma-separated GPU servers (default: the first that fit).")] = "",
    take_mig: Annotated[bool, typer.Option(help="Reconfigure MIG servers to whole GPUs when picked.")] = False,
    resume: Annotated[bool, typer.Option(help="Continue from the last complete checkpoint.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    run_dir: RunDirOption = DEFAULT,
) -> None:
    """Run the training workload: leases its GPUs, steps through modelled time, checkpoints, feels faults."""
    try:
        cfg = TrainConfig(gpus=gpus, tp=tp, pp=pp, params=params, steps=steps, global_batch=global_batch,
                          seq_len=seq_len, mfu=mfu, checkpoint_every=checkpoint_every,
                          checkpoint_scale=checkpoint_scale, storage_gbps=storage_gbps, time_scale=time_scale,
                          job_id=job_id, servers=tuple(s for s in servers.split(",") if s))
    except TrainConfigError as e:
        fail(str(e))
    if dp and dp != cfg.dp:
        fail(f"--dp {dp} disagrees with --gpus {gpus} / (tp {tp} × pp {pp}) = {cfg.dp}")
    twin = connect(run_dir)
    out = err_console if as_json else console

    def say(message: str) -> None:
        out.print(message, highlight=False)

    say(f"job {job_id}: {params:.3g} params, {gpus} GPUs = TP {tp} × PP {pp} × DP {cfg.dp}; every time printed is "
        f"modelled (H100 {cfg.peak_tflops:g} TFLOPS × MFU {mfu:g}; collectives from the fabric model), "
        f"paced at {time_scale:g} modelled s per wall s")
    with user_errors():
        try:
            job = TrainJob(cfg, twin, checkpoint_dir, resume=resume, take_mig=take_mig, log=say)
            result = job.run()
        except TrainError as e:
            fail(str(e))
    if as_json:
        console.print_json(json.dumps(result.as_dict()))
    if result.status != "completed":
        err_console.print(f"[bold red]job failed:[/] {result.reason} (after step {result.last_step}; resume with "
                          f"--resume)", highlight=False)
        raise typer.Exit(1)
