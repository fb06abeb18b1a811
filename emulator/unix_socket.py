"""Unix sockets at paths of any length. sun_path holds 107 bytes, and a twin's run directory under a
deep checkout (a CI workspace, pytest's base directory) makes RUN/mounts/<name>.sock longer than that.
A long path is reached through its directory's file descriptor (/proc/self/fd/N/NAME), which the
kernel resolves to the same inode."""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from pathlib import Path

SUN_PATH_MAX = 107


def _at(path: Path, call: Callable[[str], None]) -> None:
    if len(os.fsencode(str(path))) <= SUN_PATH_MAX:
        call(str(path))
        return
    fd = os.open(path.parent, os.O_PATH | os.O_DIRECTORY)
    try:
        call(f"/proc/self/fd/{fd}/{path.name}")
    finally:
        os.close(fd)


def bind(sock: socket.socket, path: Path) -> None:
    _at(path, sock.bind)


def connect(sock: socket.socket, path: Path) -> None:
    _at(path, sock.connect)
