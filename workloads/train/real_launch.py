"""`twin train --real`: real torchrun ranks on the twin's GPU servers, over its compute fabric.

`RealJob(twin, ...).run()` leases GPUs on each server (gang: all or nothing), starts one torchrun per
server inside the server's network namespace (real_plan.py), follows rank 0's progress file, and
when the job ends (or `timeout_s` passes) stops what it started and releases the leases. Only a
`--network netns` twin has namespaces and rails to run in; anything else is refused.

Processes: each agent is started in a cgroup of its own run (emulator.process.Cgroup), because
torchrun starts its workers in sessions of their own; stopping is SIGTERM to the recorded agents
(torchrun then stops its workers), then SIGKILL to whatever is left in the cgroup. Without a
writable cgroup2 mount the agents' process groups are killed instead.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from emulator.errors import UserError
from emulator.process import Cgroup, record, stop_processes
from workloads.train.real_plan import Launch, Node, plan

Log = Callable[[str], None]
STOP_GRACE_S = 10.0
EXIT_GRACE_S = 20.0  # after the last step: the agents leave the rendezvous and exit by themselves
POLL_S = 0.2


def nvml_env() -> dict[str, str]:
    """The twin's libnvidia-ml.so.1 first on the ranks' library path, so that their NVML health check
    (gpu_health.py) asks their own server's daemon (its abstract socket, in the server's namespace)."""
    from services.gpu_node.nvml_endpoint import LIB_DIR, LIB_NAME

    if not (LIB_DIR / LIB_NAME).exists():
        return {}
    rest = os.environ.get("LD_LIBRARY_PATH", "")
    return {"LD_LIBRARY_PATH": f"{LIB_DIR}:{rest}" if rest else str(LIB_DIR)}


class RealTrainError(UserError, RuntimeError):
    """The real job cannot start as asked (nothing is left leased or running)."""


@dataclass
class RealOptions:
    steps: int = 300
    per_server: int = 2
    servers: tuple[str, ...] = ()
    nodes: int = 2  # servers picked when `servers` is empty
    checkpoint_every: int = 50
    checkpoint_dir: str = ""
    dataset: str = ""
    job_id: str = "train-real"
    allreduce_bytes: int = 1 << 20
    gloo_timeout_s: float = 20.0
    rdzv_join_timeout_s: float = 120.0  # rdzv-conf join_timeout: a rendezvous's wait for --nnodes' minimum
    step_sleep_s: float = 0.0
    hidden: int = 256  # MLP width: its gradients are what DDP all-reduces each step
    timeout_s: float = 600.0
    max_restarts: int = 3
    requeues: int = 1  # times the job is started again: without a server whose GPU was lost, or on new rails
    mig_profile: str = "1g.10gb"  # what is leased on a MIG server named in `servers`


@dataclass
class Agent:
    server: str
    proc: subprocess.Popen
    log: Path
    rec: dict[str, Any] = field(default_factory=dict)


class RealJob:
    def __init__(self, twin: Any, opts: RealOptions, workdir: Path, log: Log | None = None) -> None:
        if twin.manifest.network != "netns":
            raise RealTrainError("--real runs torchrun inside the GPU servers' network namespaces: start the twin "
                                 "with --network netns")
        self.twin, self.opts, self.workdir = twin, opts, Path(workdir)
        self.log = log or (lambda _m: None)
        self.leases: dict[str, str] = {}
        self.mig: dict[str, str] = {}   # server -> the MIG device profile its ranks were leased
        self.agents: list[Agent] = []
        self.cgroup: Cgroup | None = None
        self.events_path = self.workdir / "events.jsonl"
        self.released: dict[str, str] = {}  # server -> why its lease could not be released
        self.bandwidth_scale: float | None = None  # the compute links' shaping (None: unshaped)
        self.rail = 0  # the compute rail of the rendezvous: the lowest up on every server of the job
        self.rails_up: list[int] = []  # the rails up on every server of the job when it was last started
        self._first_agent = 0  # the current attempt's agents are self.agents[_first_agent:]

    # -------------------------------------------------------------- leases

    def pick_servers(self) -> list[str]:
        if self.opts.servers:
            unknown = [s for s in self.opts.servers if s not in self.twin.gpu_nodes]
            if unknown:
                raise RealTrainError(f"unknown GPU server {unknown[0]!r}; this twin has "
                                     f"{', '.join(sorted(self.twin.gpu_nodes))}")
            return list(self.opts.servers)
        whole = [s for s in sorted(self.twin.gpu_nodes)
                 if not any(g.mig_enabled for g in self.twin.gpu_node(s).gpus())]
        if len(whole) < self.opts.nodes:
            raise RealTrainError(f"--nodes {self.opts.nodes}: only {len(whole)} GPU servers without MIG "
                                 f"({', '.join(whole) or 'none'})")
        return whole[:self.opts.nodes]

    def network(self) -> Any:
        from emulator.network import Network

        return Network.attach(self.twin.run.path / "network")

    @staticmethod
    def common_rails(net: Any, servers: list[str]) -> list[int]:
        """The compute rails up on every one of `servers` now (the network's state)."""
        return sorted(set.intersection(*(set(net.rails_up(s)) for s in servers)))

    def acquire(self, servers: list[str]) -> list[Node]:
        net = self.network()
        self.bandwidth_scale = net.bandwidth_scale
        up = self.common_rails(net, servers)
        if not up:
            raise RealTrainError(f"no compute rail is up on every server of the job ({', '.join(servers)}): "
                                 f"rails up {', '.join(f'{s} {net.rails_up(s)}' for s in servers)}")
        self.rails_up, self.rail = up, up[0]  # the rendezvous and MASTER_ADDR: rail 0 unless its leaf is down
        nodes = []
        try:
            for s in servers:
                node = self.twin.gpu_node(s)
                # A MIG server's GPUs are sliced: lease slices, one rank each (whole GPUs elsewhere).
                mig = self.opts.mig_profile if any(g.mig_enabled for g in node.gpus()) else ""
                lease = node.lease(self.opts.job_id, count=self.opts.per_server, mig_profile=mig, utilization=90)
                self.leases[s] = lease.id
                if mig:
                    self.mig[s] = mig
                nodes.append(Node(s, net.netns(s), tuple(net.rail_addresses(s)), len(lease.devices),
                                  {**lease.env, **nvml_env()}))
        except Exception as e:
            self.release()
            raise RealTrainError(f"cannot lease {self.opts.per_server} GPUs on {s}: {e} (gang: nothing kept)") from e
        return nodes

    def release(self) -> None:
        for s, lid in list(self.leases.items()):
            try:
                self.twin.gpu_node(s).release(lid)
            except Exception as e:  # a cut-off server's API is unreachable: say so, keep going
                self.released[s] = f"lease {lid} not released: {e}"
                self.log(f"{s}: lease {lid} not released ({e})")
        self.leases = {}

    # ------------------------------------------------------------ processes

    def worker_args(self) -> list[str]:
        o = self.opts
        args = ["--steps", str(o.steps), "--checkpoint-every", str(o.checkpoint_every),
                "--checkpoint-dir", o.checkpoint_dir, "--events", str(self.events_path),
                "--allreduce-bytes", str(o.allreduce_bytes), "--timeout", f"{o.gloo_timeout_s:g}",
                "--step-sleep", f"{o.step_sleep_s:g}", "--hidden", str(o.hidden)]
        return args + (["--dataset", o.dataset] if o.dataset else [])

    def start(self, launches: list[Launch]) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.cgroup = Cgroup.create(f"train-real-{os.getpid()}-{int(time.time())}")
        for la in launches:
            argv = ["ip", "netns", "exec", la.netns, *la.argv]
            if self.cgroup is not None:
                argv = self.cgroup.wrap(argv)
            out = self.workdir / f"{la.server}.log"
            with open(out, "ab") as f:
                proc = subprocess.Popen(argv, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                        env={**os.environ, **la.env}, start_new_session=True)
            self.agents.append(Agent(la.server, proc, out, record(proc.pid)))
        (self.workdir / "pids.json").write_text(json.dumps(
            {"agents": [{"server": a.server, **a.rec} for a in self.agents],
             "cgroup": str(self.cgroup.path) if self.cgroup else None}))

    def stop(self) -> None:
        stop_processes([a.proc.pid for a in self.agents], STOP_GRACE_S, kill_group=self.cgroup is None)
        if self.cgroup is not None:
            self.cgroup.kill()
            self.cgroup.remove()
        for a in self.agents:
            a.proc.poll()

    # ------------------------------------------------------------------ run

    def events(self) -> list[dict[str, Any]]:
        try:
            lines = self.events_path.read_text().splitlines()
        except FileNotFoundError:
            return []
        return [json.loads(x) for x in lines if x.strip().endswith("}")]

    def wait(self, on_poll: Callable[[RealJob, list[dict[str, Any]]], None] | None = None, since: int = 0) -> str:
        """Until rank 0 reports the last step, a rank reports its GPU lost, every agent has exited, or the
        timeout: the outcome. `since`: the events of earlier attempts, not looked at."""
        end = time.monotonic() + self.opts.timeout_s
        while time.monotonic() < end:
            evs = self.events()
            if on_poll is not None:
                on_poll(self, evs)
            if any(e["kind"] == "finished" for e in evs[since:]):
                self._let_exit()
                return "completed"
            lost = [e for e in evs[since:] if e["kind"] == "gpu_lost"]
            if lost:
                return f"GPU lost: rank {lost[0]['rank']} on {lost[0]['server']} ({lost[0]['error']})"
            host, *_ = now = self.agents[self._first_agent:]
            if host.proc.poll() is not None:  # the rendezvous host: without it nothing goes on
                codes = ", ".join(f"{a.server} {a.proc.returncode}" for a in now)
                return (f"failed: torchrun on {host.server} (the rendezvous host) exited before the last "
                        f"step (exit status {codes})")
            time.sleep(POLL_S)
        return f"failed: not finished within {self.opts.timeout_s:g} s"

    def _let_exit(self) -> None:
        end = time.monotonic() + EXIT_GRACE_S
        while time.monotonic() < end and any(a.proc.poll() is None for a in self.agents):
            time.sleep(POLL_S)

    def attempt(self, servers: list[str], rdzv_id: str,
                on_poll: Callable[[RealJob, list[dict[str, Any]]], None] | None) -> tuple[str, list[Node]]:
        """Lease, start torchrun on `servers`, wait for the outcome, stop and release: (outcome, nodes)."""
        nodes = self.acquire(servers)
        since = len(self.events())
        try:
            launches = plan(nodes, rdzv_id, self.worker_args(), max_restarts=self.opts.max_restarts, rail=self.rail,
                            join_timeout_s=self.opts.rdzv_join_timeout_s)
            self.log(f"job {self.opts.job_id}: torchrun on {', '.join(servers)}, {sum(n.devices for n in nodes)} "
                     f"ranks, rendezvous and MASTER_ADDR on {nodes[0].rails[self.rail]} "
                     f"(rail{self.rail} of {nodes[0].server})")
            self._first_agent = len(self.agents)
            self.start(launches)
            return self.wait(on_poll, since), nodes
        finally:
            self.stop()
            self.release()

    def run(self, on_poll: Callable[[RealJob, list[dict[str, Any]]], None] | None = None) -> dict[str, Any]:
        """The job, and again (`requeues` times, from its last checkpoint), as a scheduler requeues a failed
        job: without the servers where a rank found its GPU lost (its health check drains such a node; at
        least all servers but one are needed, as torchrun's --nnodes N-1:N), or on the same servers when
        the compute rails up changed under it (a leaf switch lost breaks the group's connections; the
        next attempt's ranks take the rails left)."""
        servers = self.pick_servers()
        t0 = time.time()
        outcome, nodes = self.attempt(servers, self.opts.job_id, on_poll)
        first, first_rail, left, requeued = nodes, self.rail, list(servers), []
        while len(requeued) < self.opts.requeues:
            if outcome.startswith("GPU lost"):
                drained = {e["server"] for e in self.events() if e["kind"] == "gpu_lost"}
                left = [s for s in left if s not in drained]
                if len(left) < max(1, len(servers) - 1):
                    outcome = f"failed: {outcome}; {len(left)} of {len(servers)} servers left, too few to requeue on"
                    break
                requeued.append({"t": time.time(), "servers": left, "drained": sorted(drained)})
                self.log(f"{outcome}: requeued on {', '.join(left)} (drained: {', '.join(sorted(drained))})")
            elif outcome.startswith("failed") and (now := self.common_rails(self.network(), left)) \
                    and now != self.rails_up:
                requeued.append({"t": time.time(), "servers": left, "drained": [], "rails_up": now})
                self.log(f"{outcome}: the compute rails up on every server went from {self.rails_up} to {now}: "
                         f"requeued on {', '.join(left)}")
            else:
                break
            outcome, _ = self.attempt(left, f"{self.opts.job_id}-requeue{len(requeued)}", on_poll)
        if outcome.startswith("GPU lost"):
            outcome = f"failed: {outcome}"
        return {"outcome": outcome, "started_at": t0, "ended_at": time.time(), "servers": servers,
                "requeued": requeued, "ranks_leased": sum(n.devices for n in first), "mig": dict(self.mig),
                "per_server": [n.devices for n in first], "master_addr": first[0].rails[first_rail],
                "agent_exit": {a.server: a.proc.returncode for a in self.agents},
                "not_released": self.released, "events": self.events(), "workdir": str(self.workdir)}
