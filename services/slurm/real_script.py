"""The batch script of `twin slurm train-script --real`: real PyTorch ranks (torchrun + gloo) as a Slurm
job on a `--network netns` twin, as users of the real cluster run torchrun under Slurm.

- One task per node (`srun`), started by that node's slurmd, so inside the node's namespace. It runs
  torchrun with one rank per GPU Slurm gave the job there (`--gres`, so Slurm's
  CUDA_VISIBLE_DEVICES). The worker is workloads/train/real_worker.py, run as a module.
- The rendezvous (c10d) and MASTER_ADDR are on the batch host's rail-0 address: the batch script runs
  on the allocation's first node. Each task's `--local-addr` is its own node's rail 0.
- Each rank checks its GPU through the twin's libnvidia-ml.so.1 (on LD_LIBRARY_PATH), which answers
  from the node's own daemon.
- Failures go to Slurm: torchrun does not restart by itself (TORCHRUN_RESTARTS, 0), and `srun
  --kill-on-bad-exit` ends the step when one node's torchrun fails. The script then requeues the job
  (while attempts remain). The twin's node health check drains a node whose GPU took Xid 79, so the
  next attempt runs on other nodes, or on fewer with `-N MIN-MAX`. Every attempt resumes from the
  newest checkpoint in CKPT_DIR, which is named after the job, not the attempt.
- Rank 0's progress (and any rank's `gpu_lost`) is appended to CKPT_DIR/events.jsonl.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from services.gpu_node.nvml_endpoint import LIB_DIR
from services.slurm.config import GPU_TYPE, PARTITION_EXPLORATORY

WORKER_MODULE = "workloads.train.real_worker"
RDZV_PORT = 29400   # as real_plan.py's


def real_script(*, ckpt_root: str | Path, nodes: str = "2", gpus_per_node: int = 2,
                partition: str = PARTITION_EXPLORATORY, job_name: str = "train-real", python: str = sys.executable,
                worker_args: list[str] | None = None, max_restarts: int = 3,
                output: str = "slurm-%x-%j.out") -> str:
    """A bash batch script for `sbatch`. `ckpt_root`: where each job's checkpoint directory goes.
    `nodes`: N or MIN-MAX. `worker_args`: real_worker.py options baked in; arguments given to the
    script come after them and win."""
    args = " ".join(shlex.quote(a) for a in (worker_args or []))
    root = shlex.quote(str(ckpt_root))
    return f"""#!/bin/bash
# Real PyTorch ranks as a Slurm job on the twin (clustertwin `twin slurm train-script --real`).
#
#   sbatch [-N NODES|MIN-MAX] real.sbatch [real_worker options, e.g. --steps 500]
#
# One task per node runs torchrun in that node's namespace: one rank per GPU Slurm gave the job there,
# gloo on each GPU's compute rail, the rendezvous and MASTER_ADDR on the batch host's rail 0. Each
# rank checks its GPU through the twin's NVML (Xid 79: GPU_IS_LOST, the rank stops). A failed run
# is requeued while attempts remain (the node health check drains a node with a lost GPU) and
# resumes from the newest checkpoint in CKPT_DIR (default: <root>/<job name>-<job id>).
#SBATCH --job-name={job_name}
#SBATCH --partition={partition}
#SBATCH --nodes={nodes}
#SBATCH --ntasks-per-node=1
#SBATCH --gres=gpu:{GPU_TYPE}:{gpus_per_node}
#SBATCH --requeue
#SBATCH --open-mode=append
#SBATCH --output={output}
set -u
export PYTHON=${{PYTHON:-{shlex.quote(python)}}}
export CKPT_DIR=${{CKPT_DIR:-{root}/${{SLURM_JOB_NAME}}-${{SLURM_JOB_ID}}}}
MAX_RESTARTS=${{MAX_RESTARTS:-{max_restarts}}}
export ATTEMPT=${{SLURM_RESTART_COUNT:-0}}
# the lowest rail with carrier (rail 0 unless its leaf switch is down): the rendezvous, on every node
for r in 0 1 2 3 4 5 6 7; do
    ip -o link show dev "rail$r" 2>/dev/null | grep -q LOWER_UP && {{ export RAIL=rail$r; break; }}
done
export RAIL=${{RAIL:?no compute rail is up on the batch host}}
export MASTER=$(ip -4 -o addr show dev $RAIL | awk '{{split($4, a, "/"); print a[1]}}')
export NNODES=$SLURM_JOB_NUM_NODES PER_NODE=${{SLURM_GPUS_ON_NODE:?the job has no GPUs: --gres=gpu:...}}
export TORCHRUN_RESTARTS=${{TORCHRUN_RESTARTS:-0}}
export LD_LIBRARY_PATH={shlex.quote(str(LIB_DIR))}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}
export TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1 OMP_NUM_THREADS=1 PYTHONUNBUFFERED=1 PYTHONWARNINGS=ignore::UserWarning
mkdir -p "$CKPT_DIR"
echo "[$(date +%T)] job $SLURM_JOB_ID attempt $ATTEMPT on $SLURM_JOB_NODELIST: $NNODES nodes x $PER_NODE ranks, \\
rendezvous and MASTER_ADDR on $MASTER"
srun --kill-on-bad-exit=1 bash -c '
  LOCAL=$(ip -4 -o addr show dev $RAIL | awk "{{split(\\$4, a, \\"/\\"); print a[1]}}")
  HOST=false; [ "$LOCAL" = "$MASTER" ] && HOST=true
  export TWIN_SERVER=$SLURMD_NODENAME
  exec "$PYTHON" -m torch.distributed.run --nnodes="$NNODES" --nproc-per-node="$PER_NODE" \\
    --rdzv-backend=c10d --rdzv-endpoint="$MASTER:{RDZV_PORT}" --rdzv-id="$SLURM_JOB_ID-$ATTEMPT" \\
    --rdzv-conf="is_host=$HOST,join_timeout=120" --local-addr="$LOCAL" \\
    --max-restarts="$TORCHRUN_RESTARTS" --monitor-interval=0.5 -m {WORKER_MODULE} \\
    --checkpoint-dir "$CKPT_DIR" --events "$CKPT_DIR/events.jsonl" "$@"' torchrun {args} "$@"
rc=$?
echo "[$(date +%T)] job $SLURM_JOB_ID attempt $ATTEMPT: torchrun exited $rc"
if (( rc != 0 )); then   # a rank that found its GPU lost said so there
    grep -s '"kind": "gpu_lost"' "$CKPT_DIR/events.jsonl" | tail -n 1
fi
if (( rc != 0 && ATTEMPT < MAX_RESTARTS )); then
    echo "[$(date +%T)] requeueing job $SLURM_JOB_ID (attempt $(( ATTEMPT + 1 )) will resume)"
    scontrol requeue "$SLURM_JOB_ID"
fi
exit $rc
"""
