"""Passing open files between the twin's daemons on one host: an abstract Unix socket to connect to,
and descriptors sent with a message's first bytes (SCM_RIGHTS). Used where a daemon would otherwise
copy a file's bytes through loopback TCP to a daemon beside it (the Ceph OSD's chunk reads,
services/ceph/msgr_local.py; the Lustre OSS's bulk reads, services/lustre/bulk.py).

Abstract socket names belong to a network namespace: a daemon on another emulated host (the netns
backend) does not find the name and talks TCP, across the emulated network and its faults.
"""

from __future__ import annotations

import array
import contextlib
import os
import socket

MAX_FDS = 250   # descriptors one message carries (the kernel's SCM_MAX_FD is 253)
_INT = array.array("i").itemsize


def connect(name: str, timeout: float) -> socket.socket | None:
    """A connection to the abstract Unix socket `name` (leading NUL) if a daemon in this network
    namespace listens on it, else None."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(name)
    except OSError:
        sock.close()
        return None
    return sock


def rights(fds: list[int]) -> list[tuple[int, int, bytes]]:
    """The ancillary data that passes `fds` with a `sendmsg`."""
    return [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds).tobytes())] if fds else []


def recv_with_fds(sock: socket.socket, n: int) -> tuple[bytes, list[int]]:
    """Exactly `n` bytes (a message's header) and the descriptors that came with them."""
    data, anc, _, _ = sock.recvmsg(n, socket.CMSG_SPACE(MAX_FDS * _INT), socket.MSG_WAITALL | socket.MSG_CMSG_CLOEXEC)
    fds: list[int] = []
    for level, kind, payload in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            got = array.array("i")
            got.frombytes(payload[: len(payload) - len(payload) % _INT])
            fds += got.tolist()
    if data and len(data) < n:   # (the kernel stops a read at the skb the descriptors came in)
        data += sock.recv(n - len(data), socket.MSG_WAITALL)
    if len(data) < n:
        close_all(fds)
        raise ConnectionError("the peer closed the connection")
    return data, fds


def close_all(fds: list[int]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)
