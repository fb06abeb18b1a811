"""One OST an OSS may serve, and the lock that says which OSS of a failover pair serves it.

As Lustre's multiple-mount protection: an OST is served by whichever OSS of the pair holds the flock
on `<OST dir>.lock` (the kernel drops a dead process's flock, so a partner finds it free). When the
owner is back it asks for its OST (`<OST dir>.want`, holding its pid) and the partner hands it back.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from emulator.procutil import pid_alive


class OstTarget:
    """One OST this OSS may serve: its lock (held while serving)."""

    def __init__(self, spec: dict, own: bool) -> None:
        self.index = int(spec["index"])
        self.dir = Path(spec["dir"])
        self.capacity = int(spec["capacity_bytes"])
        self.own = own
        self.lock_path = self.dir.with_name(self.dir.name + ".lock")
        self.want_path = self.dir.with_name(self.dir.name + ".want")
        self.fd: int | None = None

    def try_lock(self) -> bool:
        if self.fd is None:
            self.lock_path.parent.mkdir(parents=True, exist_ok=True)
            self.fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            return False

    def unlock(self) -> None:
        if self.fd is not None:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None

    def want_back(self, name: str) -> None:
        """The owner asks its partner for this OST."""
        if not self.want_path.exists():
            self.want_path.write_text(f"{os.getpid()} {name}\n")

    def owner_wants_it(self) -> bool:
        """The owner OSS is back and asked for this OST (its pid in the .want file is alive)."""
        try:
            pid = int(self.want_path.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return False
        return pid_alive(pid)
