"""Starting, stopping and inspecting a twin's Slurm: what `twin slurm up|down|status|env` do.

Slurm lives in the twin's run directory (`RUN_DIR/slurm/`), run by a detached
`python -m services.slurm.daemon` (see there) so that it outlives the command that started it.
`down` stops that process by its recorded pid (it stops its daemons), then kills whatever is left in
the cluster's recorded cgroup, so that a killed daemon process leaves nothing behind either.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from emulator.process import Cgroup, same_process, stop_process
from emulator.rundir import RunDir, RunDirError
from services.slurm.cluster import APT_PACKAGES, missing_tools
from services.slurm.daemon import slurm_dir

STOP_TIMEOUT_S = 30.0
MUNGE_SOCKET_MAX = 107  # sun_path


class SlurmTwinError(RuntimeError):
    """A user-facing failure to start, stop or reach a twin's Slurm."""


def conf_path(run: RunDir) -> Path:
    return slurm_dir(run) / "slurm.conf"


def running(run: RunDir) -> int | None:
    """The pid of the live Slurm daemon process of `run` (as recorded: pid and start time), or None."""
    try:
        pid = int((slurm_dir(run) / "daemon.pid").read_text().strip())
    except (OSError, ValueError):
        return None
    doc = state(run)
    return pid if doc.get("pid") == pid and same_process(pid, doc.get("start")) else None


def daemon_output(run: RunDir) -> Path:
    """The daemon process's stdout/stderr (what it says before its own log exists)."""
    return run.logs / "slurm.out"


def state(run: RunDir) -> dict[str, Any]:
    try:
        return run.read(slurm_dir(run) / "state.json")
    except RunDirError:
        return {}


def up(run: RunDir, *, timeout: float = 120.0, health_interval: int = -1) -> dict[str, Any]:
    """Start Slurm for the twin in `run`; return its state document once every node is registered.
    `health_interval`: seconds between health checks, 0 for none, <0 for `healthcheck.auto_interval`."""
    if missing := missing_tools():
        raise SlurmTwinError(f"Slurm needs {', '.join(missing)}: apt-get install {' '.join(APT_PACKAGES)} "
                             "(`make install` does)")
    if os.geteuid() != 0:
        raise SlurmTwinError("Slurm on the twin runs as root (SlurmUser=root, jobs as root)")
    if run.running_supervisor() is None:
        raise SlurmTwinError(f"no twin running in {run.path}: start one with `twin up rack --run-dir {run.path}`")
    if pid := running(run):
        raise SlurmTwinError(f"Slurm already runs for the twin in {run.path} (pid {pid}); "
                             f"`twin slurm down --run-dir {run.path}` stops it")
    socket_path = slurm_dir(run) / "munge" / "munge.socket"
    if len(str(socket_path)) > MUNGE_SOCKET_MAX:
        raise SlurmTwinError(f"run directory path too long for munge's socket ({socket_path}): use a shorter --run-dir")
    directory = slurm_dir(run)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "state.json").unlink(missing_ok=True)
    run.logs.mkdir(parents=True, exist_ok=True)
    log = open(daemon_output(run), "ab")
    proc = subprocess.Popen([sys.executable, "-m", "services.slurm.daemon", str(run.path), "--timeout", str(timeout),
                             "--health-interval", str(health_interval)],
                            stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
    log.close()
    deadline = time.monotonic() + timeout + 15
    while True:
        doc = state(run) if (directory / "state.json").exists() else {}
        if doc.get("pid") == proc.pid and doc.get("state") == "ready":
            return doc
        if doc.get("pid") == proc.pid and doc.get("state") == "failed":
            proc.wait(STOP_TIMEOUT_S)
            raise SlurmTwinError(f"Slurm did not start: {doc.get('error')} (log: {directory / 'daemon.log'})")
        if proc.poll() is not None:
            raise SlurmTwinError(f"the Slurm daemon process exited with {proc.returncode}: "
                                 f"{_tail(daemon_output(run)) or _tail(directory / 'daemon.log')}")
        if time.monotonic() > deadline:
            down(run)
            raise SlurmTwinError(f"Slurm not ready within {timeout:.0f}s (log: {directory / 'daemon.log'})")
        time.sleep(0.1)


def _tail(path: Path, lines: int = 10) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def down(run: RunDir, timeout: float = STOP_TIMEOUT_S) -> list[str]:
    """Stop the twin's Slurm; returns what was stopped ([] if nothing ran). Idempotent."""
    stopped: list[str] = []
    pid = running(run)
    if pid:   # SIGTERM: it cancels the jobs and stops its daemons; SIGKILL: they die with it
        stop_process(pid, timeout)
        stopped.append(f"slurm daemon {pid}")
    record = slurm_dir(run) / "cgroup"
    cgroup = Cgroup.load(record)
    if cgroup is not None:   # job steps and daemons that outlived a killed daemon process
        if left := cgroup.kill():
            stopped.append(f"{len(left)} leftover process(es)")
        cgroup.remove()
        record.unlink(missing_ok=True)
    return stopped


def env(run: RunDir) -> dict[str, str]:
    """What a shell needs to use the twin's Slurm (munge's socket is named in slurm.conf)."""
    return {"SLURM_CONF": str(conf_path(run))}


def sinfo(run: RunDir, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["sinfo", *args], env=dict(os.environ, **env(run)), capture_output=True, text=True,
                          timeout=20, check=False)


def status(run: RunDir) -> dict[str, Any]:
    """The daemon's pid and state document, and node states as `sinfo` reports them now."""
    doc = state(run)
    pid = running(run)
    nodes: dict[str, dict[str, str]] = {}
    if pid:
        r = sinfo(run, "-h", "-N", "-o", "%N|%T|%G|%E")
        for line in r.stdout.splitlines():
            name, st, gres, reason = line.split("|", 3)
            nodes[name] = {"state": st, "gres": gres, "reason": "" if reason == "none" else reason}
    return {"run_dir": str(run.path), "pid": pid, "state": doc.get("state", "absent") if pid else
            ("stopped" if doc else "absent"), "slurm_conf": str(conf_path(run)), "nodes": nodes,
            "error": doc.get("error", "")}
