"""The process that keeps a twin's Slurm running after `twin slurm up` has returned.

    python -m services.slurm.daemon RUN_DIR [--timeout S] [--health-interval S]

`twin slurm up` starts it detached (its own session) and waits for its state file. It reads the
twin's manifest and topology, asks every GPU server for its live GRES, renders slurm.conf and
gres.conf (with the health check) into RUN_DIR/slurm/, starts munged, slurmctld and one slurmd
per GPU server as its children (they get SIGKILL if it dies: `dies_with_parent`) and writes:

    slurm/daemon.pid     this process (what `twin slurm down` and `twin down` stop)
    slurm/state.json     {"state": starting | ready | failed | stopped, "error", "slurm_conf", "pid",
                          "start" (the pid's start time: a reused pid is not this process), ...}
    slurm/cgroup         the cgroup of the daemons and everything they spawn (services.slurm.cluster)
    slurm/daemon.log     its own log

On SIGTERM/SIGINT it stops the cluster (jobs cancelled, daemons stopped, job processes killed) and
exits. It also stops on its own, within POLL_S, when the supervisor of the twin it was started for
goes away (`twin down`, or a new twin in the run directory): Slurm nodes whose GPU servers are gone
are no cluster.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import signal
import socket
import sys
import time
from pathlib import Path
from typing import Any

from emulator.process import start_time
from emulator.procutil import pid_alive, set_process_name
from emulator.rundir import RunDir, write_json_atomic
from emulator.topology import load_topology
from services.slurm import healthcheck
from services.slurm.cluster import SlurmCluster, free_ports
from services.slurm.config import make_config
from services.slurm.live import live_gres

log = logging.getLogger("slurm-daemon")
POLL_S = 0.5


class Stop(BaseException):
    """SIGTERM/SIGINT: unwind whatever is running (start-up included) and stop the cluster."""


def slurm_dir(run: RunDir) -> Path:
    return run.path / "slurm"


def _raise_stop(signum: int, _frame: Any) -> None:
    raise Stop(signal.Signals(signum).name)


def responding(states: dict[str, str]) -> bool:
    """Every node registered: idle, or already drained by the health check at slurmd start."""
    return bool(states) and all(s in ("idle", "drained") for s in states.values())


def placement(manifest: dict[str, Any]) -> dict[str, Any]:
    """Where the daemons run: on a `--network netns` twin slurmctld in the management host's
    namespace on its OOB address (where the broker runs), each slurmd in its GPU server's namespace
    on the server's OOB address; {} (127.0.0.1, this namespace) on a loopback twin. Client commands
    in the machine's namespace reach the OOB addresses through the operator port."""
    if manifest.get("network") != "netns":
        return {}
    mgmt = manifest.get("management") or {}
    if not mgmt.get("netns"):
        raise RuntimeError("this netns twin has no management host namespace (external broker?): "
                           "Slurm on a netns twin runs slurmctld in the management host")
    servers = [d for d in manifest["daemons"] if d["kind"] == "gpu_node"]
    return {"ctld_addr": mgmt["addresses"]["oob"], "ctld_netns": mgmt["netns"],
            "node_addrs": {d["name"]: d["addresses"]["oob"] for d in servers},
            "node_netns": {d["name"]: d.get("netns") for d in servers}}


def build(run: RunDir, directory: Path, health_interval: int) -> SlurmCluster:
    manifest = run.read(run.manifest)
    topo = load_topology(manifest["topology_file"])
    gres = live_gres(manifest)
    ports = free_ports(1 + len(topo.gpu_servers))
    if health_interval < 0:
        health_interval = healthcheck.auto_interval(len(topo.gpu_servers))
    extra = (healthcheck.install(directory, run.path, health_interval, len(topo.gpu_servers))
             if health_interval > 0 else {})
    config = make_config(topo, directory, hostname=socket.gethostname(), ctld_port=ports[0],
                         slurmd_ports=ports[1:], live_gres=gres, extra=extra, **placement(manifest))
    return SlurmCluster(topo, directory, config=config)


def serve(run: RunDir, timeout: float, health_interval: int) -> int:
    directory = slurm_dir(run)
    state_file = directory / "state.json"
    doc: dict[str, Any] = {"state": "starting", "pid": os.getpid(), "start": start_time(os.getpid()),
                           "run_dir": str(run.path),
                           "slurm_conf": str(directory / "slurm.conf"), "started_at": time.time()}
    write_json_atomic(state_file, doc)
    cluster: SlurmCluster | None = None
    code = 0
    twin = run.running_supervisor()   # a new twin in the same run directory is not this cluster's
    try:
        if twin is None:
            raise RuntimeError(f"no twin running in {run.path}")
        cluster = build(run, directory, health_interval)
        began = time.monotonic()
        cluster.start(timeout=timeout, ready=responding)
        healthcheck.enable(directory)
        doc |= {"state": "ready", "health_check_interval": cluster.config.extra.get("HealthCheckInterval", "off"),
                "nodes": cluster.node_states(), "startup_s": round(time.monotonic() - began, 2),
                "pids": {k: p.pid for k, p in cluster.procs.items()}}
        write_json_atomic(state_file, doc)
        log.info("ready: %d nodes in %.1fs", len(cluster.config.nodes), doc["startup_s"])
        while True:
            if run.running_supervisor() != twin:
                log.info("the twin's supervisor (pid %d) is gone: stopping Slurm", twin)
                break
            dead = [k for k, p in cluster.procs.items() if p.poll() is not None]
            if dead and doc.get("dead") != dead:
                log.error("exited: %s (see %s)", ", ".join(dead), directory / "log")
                doc["dead"] = dead
                write_json_atomic(state_file, doc)
            time.sleep(POLL_S)
    except Stop as e:
        log.info("%s: stopping Slurm", e)
    except Exception as e:
        log.exception("Slurm did not start")
        doc |= {"state": "failed", "error": str(e)}
        code = 1
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        if cluster is not None:
            began = time.monotonic()
            cluster.stop()
            log.info("stopped in %.1fs", time.monotonic() - began)
        if doc["state"] != "failed":
            doc["state"] = "stopped"
        doc["stopped_at"] = time.time()
        write_json_atomic(state_file, doc)
        (directory / "daemon.pid").unlink(missing_ok=True)
    return code


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m services.slurm.daemon", description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds for every node to register")
    parser.add_argument("--health-interval", type=int, default=-1,
                        help="HealthCheckInterval in seconds; 0: no health check; default: by node count and cores")
    args = parser.parse_args(argv)
    run = RunDir(args.run_dir)
    directory = slurm_dir(run)
    pid_file = directory / "daemon.pid"
    try:
        other = int(pid_file.read_text())
    except (OSError, ValueError):
        other = 0
    if other and other != os.getpid() and pid_alive(other):
        print(f"Slurm already runs for {run.path} (pid {other})", file=sys.stderr)
        return 1
    # A fresh cluster each time: no state, spool or logs of a previous one.
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    pid_file.write_text(f"{os.getpid()}\n")
    logging.basicConfig(level=logging.INFO, filename=directory / "daemon.log",
                        format="%(asctime)s %(name)s %(levelname)s: %(message)s")
    set_process_name("twin-slurm")
    signal.signal(signal.SIGTERM, _raise_stop)
    signal.signal(signal.SIGINT, _raise_stop)
    return serve(run, args.timeout, args.health_interval)


if __name__ == "__main__":
    sys.exit(main())
