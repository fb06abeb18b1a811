"""`twin slurm up|down|status|env`: the real Slurm (slurmctld, one slurmd per GPU server) on a running twin."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from emulator.cli.common import DEFAULT, RunDirOption, console, fail, user_errors
from emulator.rundir import RunDir
from services.slurm import jobs, lifecycle, real_script
from services.slurm.config import SLURMD_TIMEOUT_S
from services.slurm.lifecycle import SlurmTwinError

app = typer.Typer(no_args_is_help=True, add_completion=False, help=__doc__)


@app.command()
def up(run_dir: RunDirOption = DEFAULT,
       timeout: Annotated[float, typer.Option(help="Seconds for every node to register.")] = 120.0,
       health_interval: Annotated[int, typer.Option(help="HealthCheckInterval in seconds; 0: no health check; "
                                                    "default 5, longer for many nodes on few cores.")] = -1,
       slurmd_timeout: Annotated[int, typer.Option(help="SlurmdTimeout in seconds: a node whose slurmd does "
                                                   "not answer this long is DOWN, its jobs requeued.")]
       = SLURMD_TIMEOUT_S) -> None:
    """Start munged, slurmctld and one slurmd per GPU server; return when every node is idle."""
    run = RunDir(run_dir)
    with user_errors():
        try:
            doc = lifecycle.up(run, timeout=timeout, health_interval=health_interval, slurmd_timeout=slurmd_timeout)
        except SlurmTwinError as e:
            fail(str(e))
    nodes = doc.get("nodes", {})
    idle = sum(1 for s in nodes.values() if s == "idle")
    console.print(f"Slurm up for the twin in {run.path}: {idle}/{len(nodes)} nodes idle in {doc['startup_s']:.1f}s "
                  f"(daemon pid {doc['pid']}; health check every {doc['health_check_interval']}s)", soft_wrap=True)
    drained = sorted(n for n, s in nodes.items() if s != "idle")
    if drained:
        console.print(f"[yellow]drained by the health check:[/] {', '.join(drained)} (`twin slurm status`)")
    console.print(f"use it:  export SLURM_CONF={doc['slurm_conf']}\n"
                  "         sinfo; srun -N2 hostname; sbatch --wrap 'sleep 60'; squeue; scontrol show node\n"
                  f"or:      eval $(twin slurm env --run-dir {run.path})        stop: twin slurm down",
                  soft_wrap=True)


@app.command()
def down(run_dir: RunDirOption = DEFAULT) -> None:
    """Stop the twin's Slurm: jobs, daemons, job processes."""
    run = RunDir(run_dir)
    stopped = lifecycle.down(run)
    console.print(f"Slurm for {run.path} stopped ({', '.join(stopped)})" if stopped
                  else f"no Slurm running for {run.path}")


@app.command()
def status(run_dir: RunDirOption = DEFAULT,
           as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """The Slurm daemon process and every node's state, GRES and drain reason."""
    doc = lifecycle.status(RunDir(run_dir))
    if as_json:
        print(json.dumps(doc, indent=2))
    else:
        console.print(f"Slurm for {doc['run_dir']}: {doc['state']}"
                      + (f" (pid {doc['pid']}), SLURM_CONF={doc['slurm_conf']}" if doc["pid"] else "")
                      + (f"; restarted {doc['restarts']} time(s) by the supervisor" if doc["restarts"] else "")
                      + (f"; last error: {doc['error']}" if doc["error"] else ""), soft_wrap=True)
        if doc["nodes"]:
            table = Table("node", "state", "gres", "reason")
            for name, n in doc["nodes"].items():
                table.add_row(name, n["state"], n["gres"], n["reason"], style="" if n["state"] == "idle" else "yellow")
            console.print(table)
    if not doc["pid"]:
        raise typer.Exit(1)


@app.command()
def env(run_dir: RunDirOption = DEFAULT) -> None:
    """Print `export` lines for the twin's Slurm: `eval $(twin slurm env)`."""
    run = RunDir(run_dir)
    if not lifecycle.running(run):
        fail(f"no Slurm running for {run.path}: `twin slurm up --run-dir {run.path}` starts it")
    for k, v in lifecycle.env(run).items():
        print(f"export {k}={v}")


@app.command("train-script")
def train_script(
    nodes: Annotated[int, typer.Option("--nodes", "-N", help="Nodes (8 GPUs each) the job asks for.")] = 4,
    partition: Annotated[str, typer.Option("--partition", "-p", help="exploratory or regression.")] = "exploratory",
    job_name: Annotated[str, typer.Option(help="Slurm job name (and checkpoint directory prefix).")] = "train",
    steps: Annotated[int, typer.Option(help="twin train --steps.")] = 1000,
    params: Annotated[float, typer.Option(help="twin train --params.")] = 70e9,
    checkpoint_every: Annotated[int, typer.Option(help="twin train --checkpoint-every.")] = 50,
    time_scale: Annotated[float, typer.Option(help="twin train --time-scale (modelled s per wall s).")] = 1000.0,
    checkpoint_root: Annotated[Path | None, typer.Option(help="Where job checkpoint directories go "
                                                         "(default RUN_DIR/checkpoints).")] = None,
    max_restarts: Annotated[int, typer.Option(help="Requeue a failed run this many times (0: never).")] = 3,
    real: Annotated[bool, typer.Option("--real", help="Real PyTorch ranks (torchrun + gloo) on a --network netns "
                                       "twin instead of the model (docs/TRAIN_REAL.md).")] = False,
    gpus_per_node: Annotated[int, typer.Option(help="--real: GPUs (ranks) per node, as --gres asks.")] = 2,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write the script here (default: stdout).")]
    = None,
    run_dir: RunDirOption = DEFAULT,
) -> None:
    """Print an sbatch script that runs `twin train` (or, with --real, torchrun ranks) on the job's nodes
    and resumes after a requeue."""
    run = RunDir(run_dir)
    twin = Path(sys.executable).with_name("twin")
    if real:
        if not 1 <= gpus_per_node <= 8 or nodes < 1:
            fail("--gpus-per-node must be 1..8 and --nodes >= 1")
        text = real_script.real_script(
            nodes=str(nodes), gpus_per_node=gpus_per_node, partition=partition, job_name=job_name,
            ckpt_root=checkpoint_root.resolve() if checkpoint_root else run.path / "checkpoints",
            worker_args=["--steps", str(steps), "--checkpoint-every", str(checkpoint_every)], max_restarts=max_restarts)
    else:
        text = jobs.train_script(
            nodes=nodes, partition=partition, job_name=job_name, twin=str(twin if twin.exists() else "twin"),
            run_dir=run.path, ckpt_root=checkpoint_root.resolve() if checkpoint_root else None,
            train_args=["--params", f"{params:g}", "--steps", str(steps), "--checkpoint-every", str(checkpoint_every),
                        "--time-scale", f"{time_scale:g}"],
            requeue_on_failure=max_restarts > 0, max_restarts=max_restarts)
    if output is None:
        print(text, end="")
    else:
        output.write_text(text)
        output.chmod(0o755)
        console.print(f"wrote {output}: sbatch it with SLURM_CONF from `twin slurm env --run-dir {run.path}`",
                      soft_wrap=True)
