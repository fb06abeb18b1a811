"""llite's per-mount operation counters, as `lctl get_param llite.*.stats` prints them on a Lustre client
(lustre/llite/lproc_llite.c: llite_opcode_table; lustre/obdclass/lprocfs_status.c: lprocfs_stats_seq_show
and lprocfs_stats_header):

    snapshot_time             1765031234.123456789 secs.nsecs
    start_time                1765031200.000000001 secs.nsecs
    elapsed_time              34.123456788 secs.nsecs
    write_bytes               12 samples [bytes] 100 1048576 1049776 1099511637776
    open                      4 samples [usecs] 31 904 1210 830034

Each line: the count, then the smallest, largest and summed sample and the sum of squares. A counter with
no samples is not printed. Writing anything to the file (`lctl set_param llite.*.stats=clear`) zeroes
every counter and starts `start_time` again.

What is counted is what reaches this client process: each kernel request it answers successfully, timed
from its arrival to its answer. A `read()` or `write()` the kernel's page cache answers on its own is not
seen, so `read_bytes` and `write_bytes` count the kernel's FUSE reads and writes (up to 1 MiB each), not
the application's system calls as llite would."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

BYTES, USECS = "bytes", "usecs"

# Lustre's counters in its table's order (LPROCFS_TYPE_BYTES_FULL and LPROCFS_TYPE_LATENCY, both printed
# with min, max, sum and sum of squares), those this client has a request for
COUNTERS: list[tuple[str, str]] = [
    ("read_bytes", BYTES), ("write_bytes", BYTES), ("read", USECS), ("write", USECS), ("open", USECS),
    ("close", USECS), ("fsync", USECS), ("readdir", USECS), ("setattr", USECS), ("truncate", USECS),
    ("getattr", USECS), ("create", USECS), ("link", USECS), ("unlink", USECS), ("symlink", USECS),
    ("mkdir", USECS), ("rmdir", USECS), ("mknod", USECS), ("rename", USECS), ("statfs", USECS),
    ("setxattr", USECS), ("getxattr", USECS), ("listxattr", USECS), ("removexattr", USECS),
]
UNITS = dict(COUNTERS)
WIDTH = 25


class Stats:
    """The counters of one mount; `add` from any thread."""

    def __init__(self, clock_ns: Callable[[], int] = time.time_ns) -> None:
        self._now = clock_ns
        self._mu = threading.Lock()
        self._counts: dict[str, list[int]] = {}   # name -> [count, min, max, sum, sum of squares]
        self.start_ns: int = self._now()

    def add(self, name: str, value: int) -> None:
        if name not in UNITS:
            raise KeyError(f"{name}: not an llite counter")
        with self._mu:
            c = self._counts.get(name)
            if c is None:
                self._counts[name] = [1, value, value, value, value * value]
                return
            c[0] += 1
            if value < c[1]:
                c[1] = value
            if value > c[2]:
                c[2] = value
            c[3] += value
            c[4] += value * value

    def clear(self) -> None:
        with self._mu:
            self._counts = {}
            self.start_ns = self._now()

    def render(self) -> str:
        now = self._now()
        with self._mu:
            start, counts = self.start_ns, {n: list(c) for n, c in self._counts.items()}
        lines = [_time_line("snapshot_time", now), _time_line("start_time", start),
                 _time_line("elapsed_time", now - start)]
        for name, units in COUNTERS:
            c = counts.get(name)
            if c:
                lines.append(f"{name:<{WIDTH}} {c[0]} samples [{units}] {c[1]} {c[2]} {c[3]} {c[4]}")
        return "".join(line + "\n" for line in lines)


def _time_line(field: str, ns: int) -> str:
    return f"{field:<{WIDTH}} {ns // 1_000_000_000}.{ns % 1_000_000_000:09d} secs.nsecs"
