"""Stopping what the twin started, by the record it kept: a pid with its start time, or a cgroup.

One place for "SIGTERM, wait the grace period, SIGKILL, reap" (issue 14 counted six copies). A twin
never picks processes by name, command line or environment: it stops the pids it recorded when it
started them (the start time guards against a pid the kernel has since given to someone else), and
what those processes spawned and detached from them (Slurm's slurmstepd and job tasks start their
own sessions, so no process group holds them) it finds in the cgroup it put them in.
"""

from __future__ import annotations

import errno
import logging
import os
import signal
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from emulator.procutil import pid_alive

KILL_WAIT_S = 5.0   # after SIGKILL: how long a process may take to be gone (it may be leaving a syscall)
POLL_S = 0.02
CGROUP_PARENT = "clustertwin"

log = logging.getLogger(__name__)


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (/proc/PID/stat field 22), or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def record(pid: int) -> dict[str, int | None]:
    """What to keep in the run directory to stop `pid` later: {"pid", "start"}."""
    return {"pid": pid, "start": start_time(pid)}


def same_process(pid: int | None, start: int | None) -> bool:
    """`pid` is alive and is still the process recorded with `start` (not a reused pid)."""
    return bool(pid) and start is not None and pid_alive(pid) and start_time(pid) == start


def _reap(pid: int) -> None:
    """Collect `pid`'s exit status if it is our child (else it stays a zombie until we exit)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def _signal(pid: int, sig: int, group: bool) -> None:
    try:
        os.killpg(pid, sig) if group else os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _wait_gone(pids: list[int], timeout: float) -> list[int]:
    end = time.monotonic() + timeout
    while True:
        for p in pids:
            _reap(p)
        alive = [p for p in pids if pid_alive(p)]
        for p in set(pids) - set(alive):
            _reap(p)   # one that died after the reap above is a zombie (not alive) until collected
        if not alive or time.monotonic() >= end:
            return alive
        time.sleep(POLL_S)


def stop_processes(pids: Iterable[int], grace: float, *, kill_group: bool = False) -> list[int]:
    """SIGTERM every pid, give them `grace` seconds together, SIGKILL what is left (with `kill_group`,
    the process group each leads: what it started in its session), and reap. Returns the pids that
    were running. Signals are sent in the given order."""
    running = [p for p in pids if p and pid_alive(p)]
    for p in running:
        _signal(p, signal.SIGTERM, False)
        _signal(p, signal.SIGCONT, False)   # a stopped process acts on SIGTERM only once continued
    left = _wait_gone(running, grace)
    for p in left if grace else []:
        log.warning("pid %d did not stop within %.1fs of SIGTERM; killing it", p, grace)
    for p in left:
        _signal(p, signal.SIGKILL, kill_group)
    _wait_gone(left, KILL_WAIT_S)
    return running


def stop_process(pid: int, grace: float, *, kill_group: bool = False, start: int | None = None) -> bool:
    """Stop one process as `stop_processes` does; with `start`, only if it is still the recorded one.
    True if it was running."""
    if start is not None and not same_process(pid, start):
        return False
    return bool(stop_processes([pid], grace, kill_group=kill_group))


@dataclass
class Backoff:
    """When to restart a process that died: at once after a run of at least `window` seconds; after a
    shorter one, `first` seconds doubling with each quick death in a row, and after more than `limit`
    of them not at all (`delay` answers None: it is crash-looping)."""

    window: float = 10.0
    limit: int = 5
    first: float = 0.2
    fast: int = 0   # quick deaths in a row

    def delay(self, ran_for: float) -> float | None:
        self.fast = self.fast + 1 if ran_for < self.window else 0
        if self.fast > self.limit:
            return None
        return self.first * 2 ** (self.fast - 1) if self.fast else 0.0


class Cgroup:
    """A cgroup v2 directory holding one service's processes and everything they spawn.

    `create` makes CGROUP_PARENT/NAME on the machine's cgroup2 mount, or returns None where there is
    none writable (then callers fall back to their recorded pids). Processes join it at exec time
    through `wrap` (no pre-exec hook: see procutil.dies_with_parent), so nothing they fork escapes."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    @classmethod
    def create(cls, name: str) -> Cgroup | None:
        root = cgroup2_mount()
        if root is None:
            return None
        path = root / CGROUP_PARENT / name
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError:
            return None
        return cls(path)

    @classmethod
    def load(cls, record_file: Path) -> Cgroup | None:
        """The cgroup whose path `save` wrote to `record_file`, if the file and the cgroup exist."""
        try:
            path = Path(Path(record_file).read_text().strip())
        except OSError:
            return None
        return cls(path) if (path / "cgroup.procs").exists() else None

    def save(self, record_file: Path) -> None:
        Path(record_file).write_text(f"{self.path}\n")

    def wrap(self, argv: list[str]) -> list[str]:
        """`argv`, run inside this cgroup: a shell moves itself in, then execs it (same pid)."""
        return ["sh", "-c", 'echo $$ > "$0" && exec "$@"', str(self.path / "cgroup.procs"), *argv]

    def pids(self) -> list[int]:
        try:
            return [int(p) for p in (self.path / "cgroup.procs").read_text().split()]
        except (OSError, ValueError):
            return []

    def kill(self, timeout: float = KILL_WAIT_S) -> list[int]:
        """SIGKILL every process in the cgroup (cgroup.kill, or one by one on kernels before 5.14)
        and wait until it is empty; returns the pids that were in it."""
        pids = self.pids()
        if not pids:
            return []
        kill_file = self.path / "cgroup.kill"
        end = time.monotonic() + timeout
        while True:
            if kill_file.exists():
                kill_file.write_text("1")
            else:
                for p in self.pids():
                    _signal(p, signal.SIGKILL, False)
            left = _wait_gone(self.pids(), 0.2)
            if not left or time.monotonic() >= end:
                return pids

    def kill_except(self, keep: Iterable[int], timeout: float = KILL_WAIT_S) -> list[int]:
        """SIGKILL every process in the cgroup but `keep` (a service's own daemons), and wait for them;
        returns the pids killed."""
        keep = set(keep)
        victims = [p for p in self.pids() if p not in keep]
        for p in victims:
            _signal(p, signal.SIGKILL, False)
        _wait_gone(victims, timeout)
        return victims

    def remove(self, timeout: float = KILL_WAIT_S) -> None:
        """Remove the (empty) cgroup; a cgroup still holding processes stays. Tasks just killed leave
        it a moment after they are gone from cgroup.procs (rmdir answers EBUSY until then)."""
        end = time.monotonic() + timeout
        while True:
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError as e:
                if e.errno != errno.EBUSY or time.monotonic() >= end:
                    return
                time.sleep(0.05)


def cgroup2_mount() -> Path | None:
    """Where the cgroup v2 hierarchy is mounted (/sys/fs/cgroup, or /sys/fs/cgroup/unified on a hybrid
    machine), if this process may create cgroups in it."""
    try:
        lines = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        parts = line.split()
        if len(parts) >= 3 and parts[2] == "cgroup2":
            path = Path(parts[1])
            if os.access(path, os.W_OK) and (path / "cgroup.procs").exists():
                return path
    return None
