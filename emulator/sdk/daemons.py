"""A twin daemon's process, as the supervisor recorded it (daemons.json), for the faults that kill one."""

from __future__ import annotations

import os
import signal

from emulator.process import same_process
from emulator.rundir import RunDir, RunDirError


def running_pid(run: RunDir, name: str) -> int:
    """The daemon's pid, if that pid is still the process recorded (its start time): a pid the kernel
    has given to another process since is never signalled."""
    d = run.read(run.daemons).get("daemons", {}).get(name, {})
    pid = int(d.get("pid") or 0)
    if not same_process(pid, d.get("start")):
        raise RunDirError(f"{name} is not running (state {d.get('state', 'unknown')})")
    return pid


def kill(run: RunDir, name: str) -> int:
    """SIGKILL the daemon (the supervisor restarts it); returns the pid killed."""
    pid = running_pid(run, name)
    os.kill(pid, signal.SIGKILL)
    return pid
