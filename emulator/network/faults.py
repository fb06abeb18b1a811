"""Network faults: the record each one leaves, and the nftables text that emulates loss and cuts.

Every fault is a `NetFault` (id, kind, target, time): the supervisor publishes it on the event
bus and in the fault log. Loss is nftables `numgen random mod 1000 < N drop` on the ingress hook
of both ends of a wire (so N/1000 per direction; a ping round trip survives with (1-p)^2).
A partition is an nftables table in every host of both groups dropping the other group's
addresses, on every plane.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import asdict, dataclass, field
from typing import Any

LOSS_TABLE = "ctloss"
PART_TABLE_PREFIX = "ctpart"
GUARD_TABLE = "ctguard"

KINDS = ("link-down", "loss", "switch-down", "node-cut", "partition")


@dataclass
class NetFault:
    id: str
    kind: str  # one of KINDS
    target: str  # "ib-leaf01:ib-spine01:0", "ib-leaf01", "gpu001..gpu004|gpu005..gpu008"
    time: float
    detail: dict[str, Any] = field(default_factory=dict)
    cleared: float | None = None

    @property
    def active(self) -> bool:
        return self.cleared is None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> NetFault:
        return cls(**d)


class FaultLog:
    def __init__(self, faults: list[NetFault] | None = None) -> None:
        self.faults: list[NetFault] = list(faults or [])
        start = max((int(f.id.split("-")[-1]) for f in self.faults), default=0) + 1
        self._ids = itertools.count(start)

    def new(self, kind: str, target: str, **detail: Any) -> NetFault:
        fault = NetFault(f"net-{next(self._ids)}", kind, target, time.time(), detail)
        self.faults.append(fault)
        return fault

    def active(self, kind: str | None = None) -> list[NetFault]:
        return [f for f in self.faults if f.active and (kind is None or f.kind == kind)]

    def clear(self, fault: NetFault) -> NetFault:
        fault.cleared = time.time()
        return fault


def _chain(ifname: str) -> str:
    return "in_" + "".join(ch if ch.isalnum() else "_" for ch in ifname)


def loss_script(ifname: str, permille: int) -> str:
    """Set (or with 0, remove) loss on `ifname`'s ingress; idempotent."""
    chain = _chain(ifname)
    lines = [f"add table netdev {LOSS_TABLE}",
             f'add chain netdev {LOSS_TABLE} {chain} {{ type filter hook ingress device "{ifname}" priority 0; }}',
             f"delete chain netdev {LOSS_TABLE} {chain}"]
    if permille > 0:
        lines += [f'add chain netdev {LOSS_TABLE} {chain} {{ type filter hook ingress device "{ifname}" priority 0; }}',
                  f"add rule netdev {LOSS_TABLE} {chain} numgen random mod 1000 < {permille} drop"]
    return "\n".join(lines) + "\n"


def partition_script(fault_id: str, others: list[str]) -> str:
    table = f"{PART_TABLE_PREFIX}_{fault_id.replace('-', '_')}"
    addrs = ", ".join(sorted(others))
    return (f"add table inet {table}\n"
            f"add chain inet {table} input {{ type filter hook input priority -10; }}\n"
            f"add chain inet {table} output {{ type filter hook output priority -10; }}\n"
            f"add rule inet {table} input ip saddr {{ {addrs} }} drop\n"
            f"add rule inet {table} output ip daddr {{ {addrs} }} drop\n")


def unpartition_script(fault_id: str) -> str:
    table = f"{PART_TABLE_PREFIX}_{fault_id.replace('-', '_')}"
    return f"add table inet {table}\ndelete table inet {table}\n"


def guard_script(plane_ifs: dict[str, tuple[list[str], str]]) -> str:
    """A host's plane guard: what arrives on a plane's interface must come from and go to that
    plane's prefix, and what leaves on it likewise. A host sits on several planes but never
    joins them (ip_forward=0 does the rest); this stops the weak-host model from answering a
    compute address asked for on the OOB wire."""
    rules = []
    for _plane, (ifs, prefix) in sorted(plane_ifs.items()):
        names = ", ".join(f'"{i}"' for i in ifs)
        rules.append(f"add rule inet {GUARD_TABLE} input iifname {{ {names} }} ip daddr != {prefix} drop")
        rules.append(f"add rule inet {GUARD_TABLE} input iifname {{ {names} }} ip saddr != {prefix} drop")
        rules.append(f"add rule inet {GUARD_TABLE} output oifname {{ {names} }} ip daddr != {prefix} drop")
        rules.append(f"add rule inet {GUARD_TABLE} output oifname {{ {names} }} ip saddr != {prefix} drop")
    return (f"add table inet {GUARD_TABLE}\n"
            f"add chain inet {GUARD_TABLE} input {{ type filter hook input priority -20; }}\n"
            f"add chain inet {GUARD_TABLE} output {{ type filter hook output priority -20; }}\n"
            + "\n".join(rules) + "\n")
