"""Loopback addressing: every emulated host gets its own 127.x.y.z address on each network plane.

Linux routes all of 127.0.0.0/8 to `lo`, so any such address can be bound without configuration.
Each running twin holds a *slot* (a lock file) so that two twins on one machine (say `make up` and
`make test`) never collide, and daemons can keep their real well-known ports (50051, 9400, 1883).

    address = 127.(BASE + slot*4 + plane).(host // 250).(host % 250 + 1)
"""

from __future__ import annotations

import fcntl
import os
from dataclasses import dataclass
from pathlib import Path

from emulator.errors import BadInput

PLANES = ("oob", "compute", "storage", "business")
BASE_OCTET = 100
MAX_SLOTS = 16
HOSTS_PER_OCTET = 250
SLOT_LOCK_DIR = Path(os.environ.get("TWIN_SLOT_DIR", "/tmp/clustertwin-slots"))


def host_address(slot: int, plane: str, host: int) -> str:
    if plane not in PLANES:
        raise BadInput(f"unknown plane {plane!r}; planes are {', '.join(PLANES)}")
    if not 0 <= slot < MAX_SLOTS:
        raise BadInput(f"slot {slot} out of range 0..{MAX_SLOTS - 1}")
    if not 0 <= host < 250 * HOSTS_PER_OCTET:
        raise BadInput(f"host index {host} out of range")
    second = BASE_OCTET + slot * len(PLANES) + PLANES.index(plane)
    return f"127.{second}.{host // HOSTS_PER_OCTET}.{host % HOSTS_PER_OCTET + 1}"


@dataclass
class SlotLease:
    """An flock on a slot file, held for the life of the supervisor; the kernel drops it on crash."""

    slot: int
    fd: int

    def release(self) -> None:
        try:
            os.close(self.fd)
        except OSError:
            pass


def acquire_slot(preferred: int | None = None) -> SlotLease:
    SLOT_LOCK_DIR.mkdir(parents=True, exist_ok=True)
    order = range(MAX_SLOTS) if preferred is None else [preferred]
    for slot in order:
        fd = os.open(SLOT_LOCK_DIR / f"slot-{slot}.lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        return SlotLease(slot, fd)
    raise RuntimeError(
        f"no free twin slot in {SLOT_LOCK_DIR} (all {MAX_SLOTS} held by running twins)"
        if preferred is None
        else f"twin slot {preferred} is held by another running twin"
    )
