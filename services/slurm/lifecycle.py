"""Starting, stopping and inspecting a twin's Slurm: what `twin slurm up|down|status|env` do.

Slurm lives in the twin's run directory (`RUN_DIR/slurm/`), run by a daemon of kind `slurm`
(services.slurm.daemon) that the twin's supervisor starts on demand (`daemon.start` on its control
socket), records in daemons.json and restarts like any daemon. `down` asks the supervisor to stop it
(it stops its daemons), then kills whatever is left in the cluster's recorded cgroup, so that a
killed daemon process leaves nothing behind either.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from emulator import control
from emulator.control import ControlError
from emulator.daemon_config import DaemonConfig
from emulator.errors import UserError
from emulator.process import Cgroup, same_process, stop_process
from emulator.rundir import RunDir, RunDirError, log_tail
from services.slurm.cluster import APT_PACKAGES, missing_tools
from services.slurm.config import SLURMD_TIMEOUT_S
from services.slurm.daemon import slurm_dir
from services.slurm.daemon_spec import SlurmSpec

DAEMON = "slurm"          # the daemon's name and kind in the twin
SLURM_GRPC_PORT = 50817   # slurmctld's port is 6817; here the Slurm daemon's gRPC health, on the management host
STOP_TIMEOUT_S = 30.0
MUNGE_SOCKET_MAX = 107  # sun_path


class SlurmTwinError(UserError, RuntimeError):
    """A user-facing failure to start, stop or reach a twin's Slurm."""


def conf_path(run: RunDir) -> Path:
    return slurm_dir(run) / "slurm.conf"


def record(run: RunDir) -> dict[str, Any]:
    """The supervisor's record of the Slurm daemon (daemons.json: pid, start, state, restarts), or {}."""
    try:
        return run.read(run.daemons).get("daemons", {}).get(DAEMON) or {}
    except RunDirError:
        return {}


def running(run: RunDir) -> int | None:
    """The pid of the live Slurm daemon process of `run` (as recorded: pid and start time), or None."""
    rec = record(run)
    return rec["pid"] if same_process(rec.get("pid"), rec.get("start")) else None


def daemon_output(run: RunDir) -> Path:
    """The daemon process's log (its stdout and stderr)."""
    return run.logs / f"{DAEMON}.log"


def state(run: RunDir) -> dict[str, Any]:
    try:
        return run.read(slurm_dir(run) / "state.json")
    except RunDirError:
        return {}


def daemon_config(run: RunDir, timeout: float, health_interval: int,
                  slurmd_timeout: int) -> tuple[DaemonConfig, dict[str, Any]]:
    """The Slurm daemon's DaemonConfig and manifest entry: it runs on the management host (in its
    namespace on a netns twin, where slurmctld runs), its health on the host's OOB address."""
    manifest = run.load_manifest()
    mgmt = manifest.management
    grpc = f"{mgmt.addresses['oob']}:{SLURM_GRPC_PORT}"
    cfg = DaemonConfig(
        name=DAEMON, kind=DAEMON, twin=manifest.twin, spec=SlurmSpec(timeout=timeout, health_interval=health_interval,
                                                               slurmd_timeout=slurmd_timeout),
        grpc=grpc, metrics=None,
        store_url=f"file://{slurm_dir(run) / 'state'}",   # slurmctld's StateSaveLocation: Slurm keeps its own
        broker_host=manifest.broker.host, broker_port=manifest.broker.port, log_file=str(daemon_output(run)),
        netns=mgmt.netns, clock_epoch=manifest.clock.epoch, clock_scale=manifest.clock.scale, run_dir=str(run.path))
    entry = {"name": DAEMON, "kind": DAEMON, "host": mgmt.host, "grpc": grpc, "addresses": mgmt.addresses,
             "netns": mgmt.netns, "slurm_conf": str(conf_path(run))}
    return cfg, entry


def check_can_start(run: RunDir) -> None:
    if missing := missing_tools():
        raise SlurmTwinError(f"Slurm needs {', '.join(missing)}: apt-get install {' '.join(APT_PACKAGES)} "
                             "(`make install` does)")
    if os.geteuid() != 0:
        raise SlurmTwinError("Slurm on the twin runs as root (SlurmUser=root, jobs as root)")
    if run.running_supervisor() is None:
        raise SlurmTwinError(f"no twin running in {run.path}: start one with `twin up rack --run-dir {run.path}`")
    if rec := record(run):
        raise SlurmTwinError(f"Slurm already runs for the twin in {run.path} ({rec.get('state')}, "
                             f"pid {rec.get('pid')}); `twin slurm down --run-dir {run.path}` stops it")
    socket_path = slurm_dir(run) / "munge" / "munge.socket"
    if len(str(socket_path)) > MUNGE_SOCKET_MAX:
        raise SlurmTwinError(f"run directory path too long for munge's socket ({socket_path}): use a shorter --run-dir")


def up(run: RunDir, *, timeout: float = 120.0, health_interval: int = -1,
       slurmd_timeout: int = SLURMD_TIMEOUT_S) -> dict[str, Any]:
    """Start Slurm for the twin in `run`; return its state document once every node is registered.
    `health_interval`: seconds between health checks, 0 for none, <0 for `healthcheck.auto_interval`;
    `slurmd_timeout`: slurm.conf's SlurmdTimeout."""
    if slurmd_timeout < 1:
        raise SlurmTwinError(f"--slurmd-timeout must be a whole number of seconds >= 1, not {slurmd_timeout}")
    check_can_start(run)
    directory = slurm_dir(run)
    # A fresh cluster each time: no state, spool or logs of a previous one (a restart keeps them).
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    cfg, entry = daemon_config(run, timeout, health_interval, slurmd_timeout)
    try:
        control.call(run.control_socket, "daemon.start", cfg.to_dict(), entry=entry, grace=STOP_TIMEOUT_S)
    except ControlError as e:
        raise SlurmTwinError(f"the twin's supervisor did not start Slurm: {e}") from None
    return wait_ready(run, timeout + 15)


def wait_ready(run: RunDir, within: float) -> dict[str, Any]:
    """The state document once the recorded daemon process reports Slurm ready; stops it and raises
    SlurmTwinError if it failed, died for good or took longer than `within` seconds."""
    deadline = time.monotonic() + within
    while True:
        doc, rec = state(run), record(run)
        if doc.get("state") == "ready" and same_process(doc.get("pid"), doc.get("start")):
            return doc
        why = ""
        if doc.get("state") == "failed":
            why = f"Slurm did not start: {doc.get('error')}"
        elif rec.get("state") == "failed" or not rec:
            why = f"the Slurm daemon process died ({rec.get('last_exit', 'gone')}): {log_tail(daemon_output(run), 10)}"
        elif time.monotonic() > deadline:
            why = f"Slurm not ready within {within:.0f}s"
        if why:
            down(run)
            raise SlurmTwinError(f"{why} (log: {daemon_output(run)})")
        time.sleep(0.1)


def down(run: RunDir, timeout: float = STOP_TIMEOUT_S) -> list[str]:
    """Stop the twin's Slurm; returns what was stopped ([] if nothing ran). Idempotent."""
    stopped: list[str] = []
    rec = record(run)
    if rec and run.running_supervisor():   # SIGTERM: it cancels the jobs and stops its daemons
        try:
            result = control.call(run.control_socket, "daemon.stop", DAEMON, timeout=timeout + 30)
            what = result["pid"] if result["stopped"] else f"({result['state']})"
            stopped.append(f"slurm daemon {what}")
        except ControlError as e:
            if "no daemon named" not in str(e):   # stopped meanwhile by another `down`
                raise SlurmTwinError(str(e)) from None
    elif rec and stop_process(rec.get("pid") or 0, timeout, start=rec.get("start")):   # outlived its supervisor
        stopped.append(f"slurm daemon {rec['pid']}")
    record_file = slurm_dir(run) / "cgroup"
    cgroup = Cgroup.load(record_file)
    if cgroup is not None:   # job steps and daemons that outlived a killed daemon process
        if left := cgroup.kill():
            stopped.append(f"{len(left)} leftover process(es)")
        cgroup.remove()
        record_file.unlink(missing_ok=True)
    return stopped


def env(run: RunDir) -> dict[str, str]:
    """What a shell needs to use the twin's Slurm (munge's socket is named in slurm.conf)."""
    return {"SLURM_CONF": str(conf_path(run))}


def sinfo(run: RunDir, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["sinfo", *args], env=dict(os.environ, **env(run)), capture_output=True, text=True,
                          timeout=20, check=False)


def status(run: RunDir) -> dict[str, Any]:
    """The daemon's pid, state document and restarts, and node states as `sinfo` reports them now."""
    doc, rec = state(run), record(run)
    pid = running(run)
    nodes: dict[str, dict[str, str]] = {}
    if pid:
        r = sinfo(run, "-h", "-N", "-o", "%N|%T|%G|%E")
        for line in r.stdout.splitlines():
            name, st, gres, reason = line.split("|", 3)
            nodes[name] = {"state": st, "gres": gres, "reason": "" if reason == "none" else reason}
    if pid and doc.get("pid") == pid:
        current = doc.get("state", "starting")
    elif rec:   # the supervisor is restarting it, or gave up
        current = rec.get("state", "unknown")
    else:
        current = "stopped" if doc else "absent"
    return {"run_dir": str(run.path), "pid": pid, "state": current, "restarts": rec.get("restarts", 0),
            "slurm_conf": str(conf_path(run)), "nodes": nodes, "error": doc.get("error", "")}
