"""The process that runs a twin's Slurm: a daemon of kind `slurm`, forked and kept running by the
twin's supervisor like every other daemon (`run(cfg)`).

`twin slurm up` (services.slurm.lifecycle) asks the supervisor to start it, then waits for its state
file. It reads the twin's manifest and topology, asks every GPU server for its live GRES, renders
slurm.conf and gres.conf (with the health check, and the Prolog/Epilog by which jobs hold twin
leases on their GPUs: job_leases.py) into RUN_DIR/slurm/, starts munged, slurmctld and
one slurmd per GPU server as its children (they get SIGKILL if it dies: `dies_with_parent`) and writes:

    slurm/state.json     {"state": starting | ready | failed | stopped, "error", "slurm_conf", "pid",
                          "start" (the pid's start time), "ports", "recovered", ...}
    slurm/cgroup         the cgroup of the daemons and everything they spawn (services.slurm.cluster)

    cfg.spec             a SlurmSpec (services/slurm/daemon_spec.py): timeout, the seconds for every
                         node to register; health_interval, HealthCheckInterval (0: none; < 0: auto);
                         slurmd_timeout, SlurmdTimeout
    cfg.grpc             gRPC health and reflection: NOT_SERVING until every node has registered,
                         SERVING while Slurm runs, NOT_SERVING again once one of its daemons exited

When the supervisor restarts it (this process died), the new process brings the same Slurm back:
the same ports (from state.json), slurmctld without -c, so it recovers its jobs and node states
from its StateSaveLocation (slurm/state/), and the job steps of the previous process are left
running (they are in the cgroup; each restarted slurmd finds its steps in its spool).
On SIGTERM it stops the cluster (jobs cancelled, daemons stopped, job processes killed) and exits.
While Slurm runs, and once it has stopped, it releases the twin leases of jobs Slurm no longer runs
(lease_sweep.py): an Epilog that never ran leaves no GPU held for good.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

from emulator.daemon_config import DaemonConfig
from emulator.grpc_server import start_server
from emulator.manifest import Manifest
from emulator.process import start_time
from emulator.rundir import RunDir, RunDirError, write_json_atomic
from emulator.topology import load_topology
from services.slurm import healthcheck, job_leases, lease_sweep
from services.slurm.cluster import SlurmCluster, free_ports
from services.slurm.config import make_config
from services.slurm.daemon_spec import SlurmSpec
from services.slurm.live import live_gres

log = logging.getLogger("slurm-daemon")
POLL_S = 0.5
# sinfo's %T of a node that has registered (a state without a `*`, `~` or `#` suffix and not down)
REGISTERED = frozenset({"idle", "allocated", "mixed", "completing", "draining", "drained"})


class Stop(BaseException):
    """SIGTERM/SIGINT: unwind whatever is running (start-up included) and stop the cluster."""


def slurm_dir(run: RunDir) -> Path:
    return run.path / "slurm"


def _raise_stop(signum: int, _frame: Any) -> None:
    raise Stop(signal.Signals(signum).name)


def responding(states: dict[str, str]) -> bool:
    """Every node registered: idle, or already drained by the health check at slurmd start, or (after a
    restart) running the jobs it kept."""
    return bool(states) and all(s in REGISTERED for s in states.values())


def placement(manifest: Manifest) -> dict[str, Any]:
    """Where the daemons run: on a `--network netns` twin slurmctld in the management host's
    namespace on its OOB address (where the broker runs), each slurmd in its GPU server's namespace
    on the server's OOB address; {} (127.0.0.1, this namespace) on a loopback twin. Client commands
    in the machine's namespace reach the OOB addresses through the operator port."""
    if manifest.network != "netns":
        return {}
    mgmt = manifest.management
    if not mgmt.netns:
        raise RuntimeError("this netns twin has no management host namespace (external broker?): "
                           "Slurm on a netns twin runs slurmctld in the management host")
    servers = manifest.daemons_of("gpu_node")
    return {"ctld_addr": mgmt.addresses["oob"], "ctld_netns": mgmt.netns,
            "node_addrs": {d.name: d.addresses["oob"] for d in servers},
            "node_netns": {d.name: d.netns for d in servers}}


def build(run: RunDir, directory: Path, health_interval: int, ports: list[int] | None,
          slurmd_timeout: int) -> SlurmCluster:
    """The cluster for the twin in `run`; on `ports` (a restart: those of the Slurm it brings back)."""
    manifest = run.load_manifest()
    topo = load_topology(manifest.topology_file)
    gres = live_gres(manifest)
    if ports is None or len(ports) != 1 + len(topo.gpu_servers):
        ports = free_ports(1 + len(topo.gpu_servers))
    if health_interval < 0:
        health_interval = healthcheck.auto_interval(len(topo.gpu_servers))
    extra = (healthcheck.install(directory, run.path, health_interval, len(topo.gpu_servers))
             if health_interval > 0 else {})
    extra |= job_leases.install(directory, run.path)   # jobs hold twin leases on their GPUs
    config = make_config(topo, directory, hostname=socket.gethostname(), ctld_port=ports[0],
                         slurmd_ports=ports[1:], live_gres=gres, extra=extra, slurmd_timeout=slurmd_timeout,
                         **placement(manifest))
    return SlurmCluster(topo, directory, config=config)


class Health:
    """The daemon's gRPC health and reflection (emulator.grpc_server) on a thread with its own event
    loop: the main thread keeps Slurm's blocking start-up and the signal handlers."""

    def __init__(self, address: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="grpc-health", daemon=True)
        self.thread.start()
        self.server, self.health = self._call(start_server(address, [], serving=False))

    def _call(self, coro: Coroutine[Any, Any, Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(10)

    def serving(self, yes: bool) -> None:
        from grpc_health.v1 import health_pb2
        status = health_pb2.HealthCheckResponse.SERVING if yes else health_pb2.HealthCheckResponse.NOT_SERVING
        self._call(self.health.set("", status))

    def stop(self) -> None:
        self._call(self.server.stop(0))
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


def previous_state(directory: Path) -> dict[str, Any]:
    """The state document of the process this one replaces ({} on a first start: `twin slurm up`
    starts from an empty directory)."""
    try:
        return RunDir(directory).read(directory / "state.json")
    except RunDirError:
        return {}


def sweep_leases(run: RunDir, cluster: SlurmCluster | None) -> None:
    """Release the twin leases of jobs Slurm no longer runs (lease_sweep); `cluster` None: Slurm has
    stopped, so all of them. A failure is logged: the next sweep tries again."""
    try:
        queue = None if cluster is None else (lambda: lease_sweep.holding_jobs(cluster.run))
        lease_sweep.sweep(run.load_manifest(), queue)
    except (OSError, RunDirError, subprocess.SubprocessError) as e:
        log.warning("lease sweep skipped: %s", e)


def watch(cluster: SlurmCluster, doc: dict[str, Any], state_file: Path, health: Health, run: RunDir) -> None:
    """Until stopped: report a Slurm daemon that exited (state.json's `dead`, health NOT_SERVING);
    every SWEEP_INTERVAL_S, release the leases of jobs whose Epilog never ran."""
    next_sweep = 0.0
    while True:
        if time.monotonic() >= next_sweep:
            sweep_leases(run, cluster)
            next_sweep = time.monotonic() + lease_sweep.SWEEP_INTERVAL_S
        dead = [k for k, p in cluster.procs.items() if p.poll() is not None]
        if dead and doc.get("dead") != dead:
            log.error("exited: %s (see %s)", ", ".join(dead), cluster.directory / "log")
            doc["dead"] = dead
            write_json_atomic(state_file, doc)
            health.serving(False)
        time.sleep(POLL_S)


def serve(run: RunDir, spec: SlurmSpec, health: Health) -> int:
    directory = slurm_dir(run)
    directory.mkdir(parents=True, exist_ok=True)
    state_file = directory / "state.json"
    previous = previous_state(directory)
    recover = bool(previous.get("ports"))
    doc: dict[str, Any] = {"state": "starting", "pid": os.getpid(), "start": start_time(os.getpid()),
                           "run_dir": str(run.path), "recovered": recover,
                           "slurm_conf": str(directory / "slurm.conf"), "started_at": time.time()}
    write_json_atomic(state_file, doc)
    cluster: SlurmCluster | None = None
    code = 0
    try:
        healthcheck.enabled_flag(directory).unlink(missing_ok=True)   # again only once every node registered
        cluster = build(run, directory, spec.health_interval, previous.get("ports"), spec.slurmd_timeout)
        doc["ports"] = [cluster.config.ctld_port, *(n.port for n in cluster.config.nodes)]
        write_json_atomic(state_file, doc)
        began = time.monotonic()
        cluster.start(timeout=spec.timeout, ready=responding, recover=recover)
        healthcheck.enable(directory)
        doc |= {"state": "ready", "health_check_interval": cluster.config.extra.get("HealthCheckInterval", "off"),
                "nodes": cluster.node_states(), "startup_s": round(time.monotonic() - began, 2),
                "pids": {k: p.pid for k, p in cluster.procs.items()}}
        write_json_atomic(state_file, doc)
        health.serving(True)
        log.info("ready: %d nodes in %.1fs%s", len(cluster.config.nodes), doc["startup_s"],
                 " (state recovered)" if recover else "")
        watch(cluster, doc, state_file, health, run)
    except Stop as e:
        log.info("%s: stopping Slurm", e)
    except Exception as e:
        log.exception("Slurm did not start")
        doc |= {"state": "failed", "error": str(e)}
        code = 1
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        health.serving(False)
        if cluster is not None:
            began = time.monotonic()
            cluster.stop()
            sweep_leases(run, None)   # no Slurm, no Slurm job: an Epilog cut short left its leases
            log.info("stopped in %.1fs", time.monotonic() - began)
        doc |= {"state": "failed" if code else "stopped", "stopped_at": time.time()}
        write_json_atomic(state_file, doc)
    return code


def run(cfg: DaemonConfig) -> None:
    """The daemon of kind `slurm` (services/slurm/service.py); exits 1 if Slurm did not start (the
    supervisor then restarts it with its backoff)."""
    if not cfg.run_dir:
        raise SystemExit("the slurm daemon runs for a twin: its DaemonConfig needs run_dir")
    signal.signal(signal.SIGTERM, _raise_stop)
    signal.signal(signal.SIGINT, _raise_stop)
    try:
        health = Health(cfg.grpc)
    except Stop:
        raise SystemExit(0) from None
    try:
        code = serve(RunDir(cfg.run_dir), SlurmSpec.of(cfg), health)
    finally:
        health.stop()
    raise SystemExit(code)
