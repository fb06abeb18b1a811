"""The MDT's tunables as `lctl get_param mdd.*` names them on the MDS node: pure, no I/O.

    mdd.hot-MDT0000.atime_diff=60

atime_diff is in seconds: a read moves a file's atime on the MDT only when it is more than this after
the stored one (services/lustre/namespace.py: atime_moves; Lustre's mdd_atime_diff, MAX_ATIME_DIFF
= 60 s by default). Lustre's proc handler reads any unsigned long (simple_strtoul, base 0: decimal, 0x hex, 0
octal), so the bounds are an unsigned 64-bit number's. A value set lives as long as the MDS's namespace: an MDS
restart or failover starts again from the default, as `lctl set_param` without -P does.
"""

from __future__ import annotations

from dataclasses import dataclass

from services.lustre.errors import LustreError
from services.lustre.namespace import Namespace
from services.lustre.ost import target_name

NS_PER_S = 10**9
U64_MAX = 2**64 - 1


@dataclass(frozen=True)
class Param:
    name: str
    value: int
    min: int = 0
    max: int = U64_MAX


def device(fsname: str, mdt_index: int) -> str:
    """The MDT's device name in parameter paths: its target name without _UUID (`hot-MDT0000`)."""
    return target_name(fsname, "MDT", mdt_index).removesuffix("_UUID")


def listing(ns: Namespace) -> list[Param]:
    return [Param(f"mdd.{device(ns.fsname, ns.mdt.index)}.atime_diff", ns.atime_diff_ns // NS_PER_S)]


def parse_value(text: str) -> int:
    """A value as the proc handler reads it: decimal, 0x hex or 0 octal, 0..U64_MAX (ValueError else)."""
    t = text.strip()
    v = int(t, 8) if len(t) > 1 and t[0] == "0" and t[1].isdigit() else int(t, 0)
    if not 0 <= v <= U64_MAX:
        raise ValueError(f"out of range (0..{U64_MAX})")
    return v


def set_param(ns: Namespace, name: str, value: str) -> Param:
    """Set `name` (exact: the caller has expanded any glob) to `value` as lctl writes it; refused
    (ENOENT, EINVAL) before anything changes."""
    if name not in {p.name for p in listing(ns)}:
        raise LustreError("ENOENT", f"{name}: no such parameter on {device(ns.fsname, ns.mdt.index)}")
    try:
        v = parse_value(value)
    except ValueError as e:
        raise LustreError("EINVAL", f"{name}={value}: {e}") from None
    ns.atime_diff_ns = v * NS_PER_S
    return listing(ns)[0]
