"""How `twin train --real` starts torchrun on each GPU server: pure, no processes, no twin.

One torchrun (the elastic agent) per server, in the server's network namespace, with one worker
per leased GPU. The rendezvous is c10d's, hosted by the first server's agent on the address of its
lowest rail up on every server of the job (`rail`; rail 0 on a healthy fabric; `is_host`: torchrun's
own guess compares the machine's hostname, which a namespace does not change); `--local-addr` is
each server's address on that rail, so MASTER_ADDR, which the agents take from rank 0's node, is a
compute-plane address too. `--nnodes MIN:MAX` with MIN = MAX - 1 lets the agents
go on without one lost server (elastic), after `last_call_timeout` and the lost node's keep-alives
expire.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

RDZV_PORT = 29400
WORKER = Path(__file__).with_name("real_worker.py")


@dataclass(frozen=True)
class Node:
    """A leased server as the plan needs it."""

    server: str
    netns: str
    rails: tuple[str, ...]  # compute address per rail, rail 0 first
    devices: int  # leased GPUs (or MIG slices): one rank each
    env: dict[str, str] = field(default_factory=dict)  # the lease's CUDA_VISIBLE_DEVICES, ...


@dataclass(frozen=True)
class Launch:
    server: str
    netns: str
    argv: tuple[str, ...]  # run inside the namespace (ip netns exec)
    env: dict[str, str]


def plan(nodes: list[Node], job_id: str, worker_args: list[str], *, min_nodes: int | None = None,
         max_restarts: int = 3, last_call_s: float = 10.0, join_timeout_s: float = 120.0,
         python: str = sys.executable, rail: int = 0) -> list[Launch]:
    """The torchrun command of each node; nodes[0] hosts the rendezvous, on compute rail `rail`."""
    if not nodes:
        raise ValueError("no servers to launch on")
    n = len(nodes)
    low = min_nodes if min_nodes is not None else max(1, n - 1)
    if not 1 <= low <= n:
        raise ValueError(f"min_nodes must be 1..{n}, not {low}")
    if not all(0 <= rail < len(node.rails) for node in nodes):
        raise ValueError(f"rail {rail} is not a compute rail of every server")
    master = nodes[0].rails[rail]
    out = []
    for i, node in enumerate(nodes):
        conf = (f"is_host={'true' if i == 0 else 'false'},join_timeout={join_timeout_s:g},"
                f"last_call_timeout={last_call_s:g}")
        argv = (python, "-m", "torch.distributed.run", f"--nnodes={low}:{n}", f"--nproc-per-node={node.devices}",
                "--rdzv-backend=c10d", f"--rdzv-endpoint={master}:{RDZV_PORT}", f"--rdzv-id={job_id}",
                f"--rdzv-conf={conf}", f"--local-addr={node.rails[rail]}", f"--max-restarts={max_restarts}",
                "--monitor-interval=0.5", str(WORKER), *worker_args)
        # Workers of a restarted group would share the first round's TCP store with the keys the
        # failed workers left (gloo's peer addresses): a new rank read a dead peer's port and got
        # "Connection refused" on every restart. A store of their own per round avoids it.
        env = {**node.env, "TORCH_DISABLE_SHARE_RDZV_TCP_STORE": "1",
               "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1", "TWIN_SERVER": node.server,
               "PYTHONWARNINGS": "ignore::UserWarning"}  # torch's "NumPy is missing" at import, in every process
        out.append(Launch(node.server, node.netns, argv, env))
    return out
