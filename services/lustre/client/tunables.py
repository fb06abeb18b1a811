"""The client's tunables under Lustre's names, as `lctl get_param`/`set_param` show them on a client
node: one `osc` device per OST, one `mdc` per MDT and one `llite` per mount, each named as Lustre
names it (`osc.hot-OST0000-osc-ffff8d2c5d3f0800`: the filesystem, the target, and the mount's
instance, on Lustre the superblock's address; here a stable 16-hex-digit id of the mount).

What each changes in this client (client/writeback.py, core.py, fuse.py):
    osc.*.max_dirty_mb          dirty (written, not yet sent) data the client may hold per OST; a writer
                                past it waits for its data to go out; 0: no write-behind, every open
                                after it bypasses the page cache and each write() is an RPC before it
                                returns (Lustre: "no writes are cached")
    osc.*.max_pages_per_rpc     4 KiB pages in one write RPC (256: 1 MiB RPCs)
    osc.*.max_rpcs_in_flight    write RPCs in flight to one OST at once
    mdc.*.max_rpcs_in_flight    metadata RPCs in flight to the MDS at once (the client's threads beyond
                                it wait)
    llite.*.max_read_ahead_mb   read-ahead window of a sequential reader (0: none)
    llite.*.statahead_max       entries whose attributes `ls -l` may take from the listing (0: none: each
                                entry's stat asks the MDS)

The twin's values are per mount (every OSC of a mount has the one value it was last set to, as
`lctl set_param osc.*.X` leaves them)."""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass, fields

from services.lustre.errors import LustreError

PAGE = 4096


@dataclass
class Tunables:
    max_dirty_mb: int = 2000           # osc
    max_pages_per_rpc: int = 256       # osc: 1 MiB write RPCs (gRPC Python moves 1 MiB messages fastest)
    osc_max_rpcs_in_flight: int = 8    # osc
    mdc_max_rpcs_in_flight: int = 8    # mdc
    max_read_ahead_mb: int = 64        # llite
    statahead_max: int = 32            # llite

    @property
    def rpc_bytes(self) -> int:
        return self.max_pages_per_rpc * PAGE


# (device type, parameter name as lctl shows it, Tunables field, lowest, highest): Lustre's ranges
PARAMS = [
    ("osc", "max_dirty_mb", "max_dirty_mb", 0, 2048),
    ("osc", "max_pages_per_rpc", "max_pages_per_rpc", 1, 4096),
    ("osc", "max_rpcs_in_flight", "osc_max_rpcs_in_flight", 1, 256),
    ("mdc", "max_rpcs_in_flight", "mdc_max_rpcs_in_flight", 1, 256),
    ("llite", "max_read_ahead_mb", "max_read_ahead_mb", 0, 8192),
    ("llite", "statahead_max", "statahead_max", 0, 8192),
]
assert {p[2] for p in PARAMS} == {f.name for f in fields(Tunables)}


def bounds_of(name: str) -> tuple[int, int]:
    """The allowed range of a parameter by its full name (type.device.param)."""
    dev, param = name.split(".")[0], name.split(".")[-1]
    return next((lo, hi) for d, n, _a, lo, hi in PARAMS if d == dev and n == param)


def instance_id(mountpoint: str, pid: int) -> str:
    """The mount's instance as Lustre prints it (a kernel address on Lustre: ffff...)."""
    return "ffff" + hashlib.sha1(f"{mountpoint}:{pid}".encode()).hexdigest()[:12]


class Registry:
    """The parameters of one mount, by their full lctl names; thread-safe."""

    def __init__(self, tunables: Tunables, fsname: str, osts: list[int], instance: str) -> None:
        self.t = tunables
        self.llite = f"llite.{fsname}-{instance}"   # the mount's llite device
        self._mu = threading.Lock()
        self.names: dict[str, str] = {}   # full name -> Tunables field
        self.bounds: dict[str, tuple[int, int]] = {}
        for dev, name, attr, lo, hi in PARAMS:
            if dev == "osc":
                devices = [f"osc.{fsname}-OST{i:04x}-osc-{instance}" for i in osts]
            elif dev == "mdc":
                devices = [f"mdc.{fsname}-MDT0000-mdc-{instance}"]
            else:
                devices = [self.llite]
            for d in devices:
                self.names[f"{d}.{name}"] = attr
                self.bounds[f"{d}.{name}"] = (lo, hi)

    def get(self, name: str) -> int:
        return int(getattr(self.t, self.names[name]))

    def set(self, name: str, value: str) -> int:
        """Set one parameter by its full name; LustreError EINVAL (nothing changed) for a bad value."""
        lo, hi = self.bounds[name]
        try:
            v = int(value, 0)
        except ValueError:
            raise LustreError("EINVAL", f"{name}={value}: not an integer") from None
        if not lo <= v <= hi:
            raise LustreError("EINVAL", f"{name}={value}: must be {lo}..{hi}")
        with self._mu:
            setattr(self.t, self.names[name], v)
        return v
