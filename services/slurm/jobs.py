"""Batch scripts for the twin's Slurm: the training workload (`twin train`) as a Slurm job.

`train_script()` renders what `twin slurm train-script` prints and what `topologies/jobs/train.sbatch`
ships (rendered with `twin` from PATH and the run directory from the environment). Why a script and
not a Slurm plugin: it is what users of the real cluster submit, and it shows the two things a
training job must do to live under a preempting scheduler:

- lease exactly what Slurm allocated: `SLURM_JOB_NODELIST` becomes `--servers`, so the job's GPUs
  are the 8 of each allocated node (one job step, `srun -N1 -n1`, is the launcher that drives them
  all, as torchrun's rendezvous host does);
- survive a requeue: the checkpoint directory is named after the job, not the attempt, so a
  requeued job (preempted by a regression job, a node failure, or requeued by itself after a
  failed run) finds its last complete checkpoint and continues with `--resume`.

Each attempt writes its result (`twin train --result-file`) to `CKPT_DIR/attempts/<N>.json`,
N = SLURM_RESTART_COUNT (0 for the first run): what drills read back.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from services.slurm.config import GPU_TYPE, PARTITION_EXPLORATORY

EXIT_FAILED = 1  # `twin train`: the job failed as a real job fails (fatal Xid, lost fabric paths)
EXIT_TERMINATED = 143  # SIGTERM: preempted or cancelled


def train_script(*, nodes: int = 4, partition: str = PARTITION_EXPLORATORY, job_name: str = "train",
                 twin: str = "twin", run_dir: str | Path | None = None, ckpt_root: str | Path | None = None,
                 train_args: list[str] | None = None, requeue_on_failure: bool = True,
                 max_restarts: int = 3, output: str = "slurm-%x-%j.out") -> str:
    """A bash batch script for `sbatch`. `run_dir` None: the twin's run directory comes from
    TWIN_RUN_DIR at submission (sbatch exports the environment). `train_args`: `twin train` options
    baked in; arguments given to the script (`sbatch train.sbatch --steps 50`) come after them and
    win. `ckpt_root`: where each job's checkpoint directory goes (default RUN_DIR/checkpoints)."""
    args = " ".join(shlex.quote(a) for a in (train_args or []))
    run = f"${{TWIN_RUN_DIR:-{shlex.quote(str(run_dir))}}}" if run_dir else \
        "${TWIN_RUN_DIR:?set TWIN_RUN_DIR to the run directory of the twin}"
    root = shlex.quote(str(ckpt_root)) if ckpt_root else '"$TWIN_RUN_DIR/checkpoints"'
    return f"""#!/bin/bash
# The seed's training job as a Slurm batch job on the twin (clustertwin `twin slurm train-script`).
#
#   sbatch [-N NODES] [-p regression] train.sbatch [twin train options, e.g. --steps 2000]
#
# One job step runs `twin train` over the job's nodes: SLURM_JOB_NODELIST becomes --servers, so the
# job leases the {GPU_TYPE} GPUs of exactly the nodes Slurm allocated. Checkpoints go to CKPT_DIR
# (default: <root>/<job name>-<job id>, the same for every attempt of the job). Requeued (preempted
# by a regression job, a node failure, or after a failed run) it resumes from the last complete
# checkpoint there. Exit: 0 completed, 1 failed (requeued while attempts remain), 143 terminated.
#SBATCH --job-name={job_name}
#SBATCH --partition={partition}
#SBATCH --nodes={nodes}
#SBATCH --ntasks-per-node=1
#SBATCH --gres=gpu:{GPU_TYPE}:8
#SBATCH --requeue
#SBATCH --open-mode=append
#SBATCH --output={output}
set -u
export COLUMNS=${{COLUMNS:-160}}  # twin train prints through rich: one line per message in the log
TWIN=${{TWIN:-{shlex.quote(twin)}}}
export TWIN_RUN_DIR={run}
CKPT_DIR=${{CKPT_DIR:-{root}/${{SLURM_JOB_NAME}}-${{SLURM_JOB_ID}}}}
REQUEUE_ON_FAILURE=${{REQUEUE_ON_FAILURE:-{int(requeue_on_failure)}}}
MAX_RESTARTS=${{MAX_RESTARTS:-{max_restarts}}}
ATTEMPT=${{SLURM_RESTART_COUNT:-0}}
SERVERS=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | paste -sd, -)
GPUS=$(( SLURM_JOB_NUM_NODES * 8 ))
PP=1
for p in 4 2; do if (( SLURM_JOB_NUM_NODES % p == 0 )); then PP=$p; break; fi; done
RESUME=()
if compgen -G "$CKPT_DIR/step_*/manifest.json" > /dev/null; then RESUME=(--resume); fi
mkdir -p "$CKPT_DIR/attempts"
echo "[$(date +%T)] job $SLURM_JOB_ID attempt $ATTEMPT on $SERVERS: $GPUS GPUs, PP $PP, ${{RESUME[*]:-from step 0}}"
srun --nodes=1 --ntasks=1 --kill-on-bad-exit=1 "$TWIN" train --run-dir "$TWIN_RUN_DIR" \\
    --job-id "slurm-$SLURM_JOB_ID" --servers "$SERVERS" --gpus "$GPUS" --pp "$PP" \\
    --checkpoint-dir "$CKPT_DIR" --reclaim-leases --result-file "$CKPT_DIR/attempts/$ATTEMPT.json" \\
    {args} "$@" "${{RESUME[@]}}"
rc=$?
echo "[$(date +%T)] job $SLURM_JOB_ID attempt $ATTEMPT: twin train exited $rc"
if (( rc == {EXIT_FAILED} && REQUEUE_ON_FAILURE && ATTEMPT < MAX_RESTARTS )); then
    echo "[$(date +%T)] requeueing job $SLURM_JOB_ID (attempt $(( ATTEMPT + 1 )) will resume)"
    scontrol requeue "$SLURM_JOB_ID"
fi
exit $rc
"""


DEFAULT_TRAIN_ARGS = ["--params", "70e9", "--steps", "1000", "--checkpoint-every", "50", "--time-scale", "1000"]


def shipped_script() -> str:
    """What topologies/jobs/train.sbatch holds: `twin` from PATH, the twin from TWIN_RUN_DIR."""
    return train_script(train_args=DEFAULT_TRAIN_ARGS)
