"""Process helpers shared by the supervisor and the daemons it starts."""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import socket
import time

_PR_SET_PDEATHSIG = 1
_PR_SET_NAME = 15
_libc = ctypes.CDLL(None, use_errno=True)


def die_with_parent() -> None:
    """Ask the kernel to SIGKILL this process when its parent dies, so that a crashed supervisor
    leaves nothing behind."""
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def set_process_name(name: str) -> None:
    """Name the process as `ps`/`top` show it (15 bytes at most)."""
    _libc.prctl(_PR_SET_NAME, name.encode()[:15], 0, 0, 0)


def wait_for_port(host: str, port: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, port), timeout=0.2):
                return True
        except OSError:
            time.sleep(0.02)
    return False


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie is not alive
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


_CLONE_NEWNET = 0x40000000


def enter_netns(name: str) -> None:
    """Move this process into the named network namespace (/run/netns/NAME), as `ip netns exec`."""
    fd = os.open(f"/run/netns/{name}", os.O_RDONLY)
    try:
        if _libc.setns(fd, _CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"setns into network namespace {name}: {os.strerror(err)}")
    finally:
        os.close(fd)


def dies_with_parent(argv: list[str]) -> list[str]:
    """`argv` prefixed so that the child gets SIGKILL when its parent dies, without a pre-exec hook.

    A pre-exec hook makes Python fork() instead of vfork(); in a process where gRPC is running,
    gRPC's fork handlers then abort the child. `setpriv` (util-linux) sets the signal instead."""
    if shutil.which("setpriv"):
        return ["setpriv", "--pdeathsig", "KILL", *argv]
    return argv
