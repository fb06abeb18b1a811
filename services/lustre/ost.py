"""Object storage targets and servers (OST, OSS), the MDT's space, and an NVMe time model.

An OST is one formatted all-NVMe target served by one OSS at a time (failover pairs share the
storage). Its `statfs` figures are what `lfs df` prints and what the MDS allocator weighs.

The NVMe model gives the time to move N bytes given how many streams share the target. The
defaults are modelled, not measured: an OST of a RAID-6 of NVMe drives behind a 400 GbE OSS,
in the range vendors publish for all-NVMe Lustre appliances. They are parameters; outputs built on
them must say they are modelled (FIDELITY.md: uncertain facts become parameters with defaults).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from services.lustre.errors import LustreError

TiB = 1024**4
GiB = 1024**3
MiB = 1024**2

# An OST stops taking new objects when its free space falls below this fraction of its size
# (ldiskfs/osd `reserved_mb_low`, default 0.1 % of the target).
FULL_RESERVE_FRACTION = 0.001
# ... or below one minimal stripe (64 KiB), whatever its size: room for no new object's first stripe.
# (What `twin lustre fault ost-full` relies on for an OST that holds nothing yet: it shrinks the
# capacity to what the OST holds, plus a byte.)
FULL_MIN_AVAIL_BYTES = 64 * 1024

Op = Literal["read", "write"]


@dataclass(frozen=True)
class NvmeModel:
    """Bandwidth and latency of one OST. All figures are parameters (modelled defaults).

    `read_bw`/`write_bw`: the target's aggregate streaming bandwidth (bytes/s).
    `stream_read_bw`/`stream_write_bw`: what one stream (one client RPC queue) can reach alone.
    `read_latency`/`write_latency`: per-request service time (seconds) at low queue depth.
    """

    read_bw: float = 12.0e9
    write_bw: float = 8.0e9
    stream_read_bw: float = 3.0e9
    stream_write_bw: float = 2.0e9
    read_latency: float = 100e-6
    write_latency: float = 30e-6

    def __post_init__(self) -> None:
        for name in ("read_bw", "write_bw", "stream_read_bw", "stream_write_bw"):
            if getattr(self, name) <= 0:
                raise LustreError("EINVAL", f"NVMe model: {name} must be positive, got {getattr(self, name)}")
        if self.read_latency < 0 or self.write_latency < 0:
            raise LustreError("EINVAL", "NVMe model: latencies must not be negative")

    def stream_bandwidth(self, op: Op, concurrency: int = 1) -> float:
        """Bytes/s one of `concurrency` equal streams gets: its own cap or a fair share of the target."""
        if concurrency < 1:
            raise LustreError("EINVAL", f"concurrency must be at least 1, got {concurrency}")
        device, stream = (self.read_bw, self.stream_read_bw) if op == "read" else (self.write_bw, self.stream_write_bw)
        return min(stream, device / concurrency)

    def transfer_time(self, nbytes: int, op: Op, concurrency: int = 1) -> float:
        """Seconds for each of `concurrency` concurrent streams to move `nbytes` (0 bytes costs nothing)."""
        if nbytes < 0:
            raise LustreError("EINVAL", f"byte count must not be negative, got {nbytes}")
        if nbytes == 0:
            self.stream_bandwidth(op, concurrency)  # still validates concurrency
            return 0.0
        latency = self.read_latency if op == "read" else self.write_latency
        return latency + nbytes / self.stream_bandwidth(op, concurrency)

    def aggregate_bandwidth(self, op: Op, concurrency: int = 1) -> float:
        """Bytes/s the target delivers in total to `concurrency` streams."""
        return self.stream_bandwidth(op, concurrency) * concurrency


@dataclass
class OstState:
    """One OST as the MDS sees it through statfs: space, objects (inodes), and reachability.

    `active` False: the OST is unreachable or deactivated (`lfs df` prints "inactive device");
    `degraded`: reachable but flagged (RAID rebuild); new files avoid both, and full ones.
    """

    index: int
    oss: str
    capacity_bytes: int
    used_bytes: int = 0
    reserved_bytes: int = 0  # blocks the backing filesystem keeps back: neither used nor available
    inodes_total: int = 100_000_000
    inodes_used: int = 0
    active: bool = True
    degraded: bool = False
    readonly: bool = False
    nvme: NvmeModel = field(default_factory=NvmeModel)
    full_reserve_fraction: float = FULL_RESERVE_FRACTION

    def __post_init__(self) -> None:
        if self.index < 0 or self.index > 0xFFFF:
            raise LustreError("EINVAL", f"OST index {self.index} out of range 0..65535")
        if self.capacity_bytes <= 0:
            raise LustreError("EINVAL", f"OST{self.index:04x}: capacity must be positive")
        if not 0 <= self.used_bytes <= self.capacity_bytes:
            raise LustreError("EINVAL", f"OST{self.index:04x}: used {self.used_bytes} outside 0..{self.capacity_bytes}")

    def name(self, fsname: str) -> str:
        return target_name(fsname, "OST", self.index)

    @property
    def avail_bytes(self) -> int:
        return max(0, self.capacity_bytes - self.used_bytes - self.reserved_bytes)

    @property
    def inodes_free(self) -> int:
        return max(0, self.inodes_total - self.inodes_used)

    @property
    def full(self) -> bool:
        """No room for new objects: free space under the reserve, or no free inodes."""
        return self.avail_bytes < max(self.capacity_bytes * self.full_reserve_fraction, FULL_MIN_AVAIL_BYTES) \
            or self.inodes_free == 0

    @property
    def usable_for_new_objects(self) -> bool:
        return self.active and not self.degraded and not self.readonly and not self.full

    def add_object(self) -> None:
        if self.inodes_free == 0:
            raise LustreError("ENOSPC", f"OST{self.index:04x}: no free inodes for a new object")
        self.inodes_used += 1

    def remove_object(self, nbytes: int) -> None:
        self.inodes_used = max(0, self.inodes_used - 1)
        self.used_bytes = max(0, self.used_bytes - nbytes)

    def grow(self, delta_bytes: int) -> None:
        """Account `delta_bytes` more (or, negative, fewer) bytes written to objects on this OST."""
        if delta_bytes > self.avail_bytes:
            raise LustreError(
                "ENOSPC", f"OST{self.index:04x}: {delta_bytes} bytes do not fit in {self.avail_bytes} available"
            )
        self.used_bytes = max(0, self.used_bytes + delta_bytes)


@dataclass
class MdtState:
    """One MDT: metadata space and inodes (every file and directory takes one)."""

    index: int = 0
    capacity_bytes: int = 4 * TiB
    used_bytes: int = 0
    inodes_total: int = 1_000_000_000
    inodes_used: int = 0
    active: bool = True
    bytes_per_inode: int = 4096  # modelled metadata footprint of one inode (inode + dir entry blocks)

    def name(self, fsname: str) -> str:
        return target_name(fsname, "MDT", self.index)

    @property
    def avail_bytes(self) -> int:
        return max(0, self.capacity_bytes - self.used_bytes)

    @property
    def inodes_free(self) -> int:
        return max(0, self.inodes_total - self.inodes_used)

    def take_inode(self) -> None:
        if self.inodes_free == 0 or self.avail_bytes < self.bytes_per_inode:
            raise LustreError("ENOSPC", f"MDT{self.index:04x}: no free inodes ({self.inodes_total} in use)")
        self.inodes_used += 1
        self.used_bytes += self.bytes_per_inode

    def release_inode(self) -> None:
        self.inodes_used = max(0, self.inodes_used - 1)
        self.used_bytes = max(0, self.used_bytes - self.bytes_per_inode)


def target_name(fsname: str, kind: Literal["OST", "MDT"], index: int) -> str:
    """`testfs-OST0000_UUID`: the target UUID `lfs df` prints (index in 4 hex digits)."""
    return f"{fsname}-{kind}{index:04x}_UUID"
