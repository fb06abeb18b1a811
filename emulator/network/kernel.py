"""The kernel side: namespaces, `ip`/`tc`/`nft` batches run in parallel, sysctls, processes.

Everything here goes through `ip -batch` / `ip -n NS -batch` (one process per namespace, a few
running at once) rather than a shell per node: that is what makes the su-1024 build take seconds.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from emulator.network.errors import NetworkError

NETNS_DIR = "/run/netns"
CLONE_NEWNET = 0x40000000
PARALLEL = max(4, 2 * (os.cpu_count() or 1))
REQUIRED_TOOLS = ("ip", "tc", "nft", "nsenter")


@dataclass(frozen=True)
class Job:
    """One command run inside one namespace, fed `stdin`."""

    ns: str  # kernel netns name, or "" for the root namespace
    tool: str  # "ip", "tc" or "nft"
    stdin: str
    force: bool = False  # carry on past failing lines (for repairs whose targets may be gone)

    def argv(self) -> list[str]:
        if self.tool == "nft":
            base = ["nft", "-f", "-"]
            return ["nsenter", f"--net={NETNS_DIR}/{self.ns}", *base] if self.ns else base
        argv = [self.tool]
        if self.ns:
            argv += ["-n", self.ns]
        if self.force:
            argv.append("-force")
        return [*argv, "-batch", "-"]


def missing_tools() -> list[str]:
    return [t for t in REQUIRED_TOOLS if shutil.which(t) is None]


def netns_list() -> list[str]:
    try:
        return sorted(os.listdir(NETNS_DIR))
    except FileNotFoundError:
        return []


def run_jobs(jobs: Sequence[Job], parallel: int = PARALLEL) -> list[str]:
    """Run every job, `parallel` at a time. Raises NetworkError naming the first failure,
    unless the job has `force` set, in which case its errors are returned as strings."""
    pending = [j for j in jobs if j.stdin.strip()]
    running: list[tuple[Job, subprocess.Popen[str]]] = []
    soft: list[str] = []
    failure: str | None = None
    while pending or running:
        while pending and len(running) < parallel:
            job = pending.pop(0)
            with tempfile.TemporaryFile("w+") as script:
                script.write(job.stdin)
                script.seek(0)
                proc = subprocess.Popen(job.argv(), stdin=script, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.PIPE, text=True)
            running.append((job, proc))
        job, proc = running.pop(0)
        _out, err = proc.communicate()
        if proc.returncode != 0 or (job.force and err.strip()):
            message = f"{job.tool} in {job.ns or 'the root namespace'}: {err.strip()}"
            if job.force:
                soft.append(message)
            elif failure is None:
                failure = message
                pending.clear()
    if failure:
        raise NetworkError(failure)
    return soft


_libc = ctypes.CDLL(None, use_errno=True)


def _setns(fd: int) -> None:
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise NetworkError(f"setns failed: {os.strerror(err)}")


def set_sysctls(settings: dict[str, dict[str, str]]) -> None:
    """Write sysctls (`net.ipv4.ip_forward` style keys) inside each namespace, without a process
    per namespace: the calling thread enters each namespace in turn and comes back."""
    home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    try:
        for ns, values in settings.items():
            fd = os.open(f"{NETNS_DIR}/{ns}", os.O_RDONLY)
            try:
                _setns(fd)
                for key, value in values.items():
                    with open("/proc/sys/" + key.replace(".", "/"), "w") as f:
                        f.write(value)
            finally:
                os.close(fd)
                _setns(home)
    finally:
        os.close(home)


def netns_inodes(names: Iterable[str]) -> dict[tuple[int, int], str]:
    found = {}
    for name in names:
        try:
            st = os.stat(f"{NETNS_DIR}/{name}")
        except OSError:
            continue
        found[(st.st_dev, st.st_ino)] = name
    return found


def pids_in(names: Iterable[str]) -> dict[int, str]:
    """Processes whose network namespace is one of `names` (what an `ip netns del` would orphan)."""
    inodes = netns_inodes(names)
    if not inodes:
        return {}
    pids = {}
    me = os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            st = os.stat(f"/proc/{entry}/ns/net")
        except OSError:
            continue
        name = inodes.get((st.st_dev, st.st_ino))
        if name:
            pids[int(entry)] = name
    return pids


def kill_pids(pids: Iterable[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def exec_in(ns: str, argv: Sequence[str], timeout: float | None = None,
            input: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", "netns", "exec", ns, *argv], capture_output=True, text=True,
                          timeout=timeout, input=input)


def netem_available(ns: str) -> bool:
    """Whether this kernel has the netem qdisc, probed on `lo` of one of our namespaces."""
    probe = subprocess.run(["tc", "-n", ns, "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        return False
    subprocess.run(["tc", "-n", ns, "qdisc", "del", "dev", "lo", "root"], capture_output=True)
    return True


def _not_operational(ns: str) -> list[str]:
    """Interfaces with carrier whose operational state is not UP yet: the kernel attaches their
    queueing discipline only then (linkwatch, up to ~1 s after carrier), dropping packets before."""
    out = subprocess.run(["ip", "-n", ns, "-br", "link", "show", "up"], capture_output=True, text=True)
    if out.returncode != 0:
        return [f"({out.stderr.strip()})"]
    waiting = []
    for line in out.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 3 and "LOWER_UP" in parts[-1] and parts[1] not in ("UP", "UNKNOWN"):
            waiting.append(parts[0])
    return waiting


def wait_operational(names: Iterable[str], timeout: float = 10.0) -> None:
    """Poll until every interface with carrier in `names` is operationally up."""
    import time

    pending = sorted(set(names))
    deadline = time.monotonic() + timeout
    while pending:
        pending = [ns for ns in pending if _not_operational(ns)]
        if not pending:
            return
        if time.monotonic() > deadline:
            raise NetworkError(f"interfaces not operational after {timeout:g} s in {pending[0]}: "
                               f"{', '.join(_not_operational(pending[0]))}")
        time.sleep(0.05)


def wait_stp(names: Iterable[str], timeout: float = 30.0) -> None:
    """Poll bridges running STP until no port is listening or learning (every port forwards or
    blocks, the loop broken), twice in a row."""
    import time

    names = sorted(set(names))
    deadline = time.monotonic() + timeout
    stable = 0
    while stable < 2:
        settling = []
        for ns in names:
            out = subprocess.run(["bridge", "-n", ns, "link"], capture_output=True, text=True).stdout
            if "state listening" in out or "state learning" in out:
                settling.append(ns)
        stable = 0 if settling else stable + 1
        if settling and time.monotonic() > deadline:
            raise NetworkError(f"spanning tree not converged after {timeout:g} s in {settling[0]}")
        time.sleep(0.1)
