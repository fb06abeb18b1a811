"""Who is on the other end of a local connection: the user id a driver would check before it lets a
caller change a device (NVML's set calls want root, and the kernel driver, not the library, enforces
it).

- A Unix socket: the kernel's SO_PEERCRED (the caller's effective uid at connect).
- TCP on this host (the loopback twin): the owner of the client's own socket, as /proc/net/tcp lists
  it (the uid that created it). A peer on another host has no entry here: None.
"""

from __future__ import annotations

import socket
import struct
from pathlib import Path

_CRED = struct.Struct("3i")   # struct ucred: pid, uid, gid


def peer_uid(sock: socket.socket) -> int | None:
    """The uid of the process at the other end of `sock`, or None if this host cannot tell."""
    if sock.family == socket.AF_UNIX:
        _, uid, _ = _CRED.unpack(sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _CRED.size))
        return uid
    if sock.family != socket.AF_INET:
        return None
    here, there = sock.getsockname(), sock.getpeername()
    want = (_hex(there), _hex(here))   # the client's socket: local = its address, remote = ours
    try:
        lines = Path("/proc/net/tcp").read_text().splitlines()[1:]
    except OSError:
        return None
    for line in lines:
        f = line.split()
        if (f[1], f[2]) == want:
            return int(f[7])
    return None


def _hex(addr: tuple[str, int]) -> str:
    """An IPv4 address and port as /proc/net/tcp writes them (the address in host byte order)."""
    ip = socket.inet_aton(addr[0])
    return f"{struct.unpack('<I', ip)[0]:08X}:{addr[1]:04X}"
