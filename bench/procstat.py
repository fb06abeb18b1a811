"""Memory (PSS) and CPU time of a set of processes, and the kernel's own memory, read from /proc."""

from __future__ import annotations

import os

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def pss_bytes(pid: int) -> int:
    """Proportional set size: pages shared between forked processes count once in total."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def kernel_memory() -> int:
    """Kernel memory that namespaces, interfaces, routes and bridges live in: slab and per-CPU."""
    fields = {}
    with open("/proc/meminfo") as f:
        for line in f:
            name, value = line.split(":", 1)
            fields[name] = int(value.split()[0]) * 1024
    return fields.get("Slab", 0) + fields.get("Percpu", 0) + fields.get("KernelStack", 0)
