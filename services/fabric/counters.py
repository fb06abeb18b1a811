"""A port's PortCounters as `perfquery` prints them, and which of them ibsim can be told to set.
Pure: text in, {field: value} out; raises CounterParseError on text it cannot read.

`perfquery LID PORT` (infiniband-diags 44, against ibsim):

    # Port counters: Lid 14 port 3 (CapMask: 0x1300)
    PortSelect:......................3
    CounterSelect:...................0x0000
    SymbolErrorCounter:..............0
    ...
    PortXmitData:....................1080

Data counters count 4-octet words (IBA), as perfquery prints them. ibsim keeps real traffic
counters for the MADs it forwards; its console `PerformanceSet "node"[port]
PortCounters.Field=value` overwrites one field (clamped by ibsim to the field's width: here a value
that does not fit is refused instead).
"""

from __future__ import annotations

import re

# IBA PortCounters fields ibsim's PerformanceSet knows, with their widths in bits (IBA 16.1.3.5).
SETTABLE_BITS: dict[str, int] = {
    "SymbolErrorCounter": 16,
    "LinkErrorRecoveryCounter": 8,
    "LinkDownedCounter": 8,
    "PortRcvErrors": 16,
    "PortRcvRemotePhysicalErrors": 16,
    "PortRcvSwitchRelayErrors": 16,
    "PortXmitDiscards": 16,
    "PortXmitConstraintErrors": 8,
    "PortRcvConstraintErrors": 8,
    "LocalLinkIntegrityErrors": 4,
    "ExcessiveBufferOverrunErrors": 4,
    "VL15Dropped": 16,
    "PortXmitData": 32,
    "PortRcvData": 32,
    "PortXmitPkts": 32,
    "PortRcvPkts": 32,
    "PortXmitWait": 32,
}
ERROR_COUNTERS = tuple(name for name in SETTABLE_BITS
                       if name not in ("PortXmitData", "PortRcvData", "PortXmitPkts", "PortRcvPkts", "PortXmitWait"))
TRAFFIC_COUNTERS = ("PortXmitData", "PortRcvData", "PortXmitPkts", "PortRcvPkts")
_HEAD = re.compile(r"^# Port counters: Lid (\d+) port (\d+)")
_FIELD = re.compile(r"^(\w+):\.*\s*(0x[0-9a-fA-F]+|\d+)$")
_NOT_COUNTERS = ("PortSelect", "CounterSelect", "CounterSelect2")


class CounterParseError(ValueError):
    pass


class CounterError(ValueError):
    """A counter ibsim cannot set, or a value that does not fit it."""


def parse_perfquery(text: str) -> dict[str, int]:
    """`perfquery LID PORT`: {counter name: value}, perfquery's names (PortSelect and the
    CounterSelect fields, which are not counters, are left out)."""
    counters: dict[str, int] = {}
    header = False
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        if _HEAD.match(line):
            header = True
            continue
        m = _FIELD.match(line)
        if not m:
            raise CounterParseError(f"perfquery line {n}: not understood: {raw!r}")
        if m.group(1) not in _NOT_COUNTERS:
            counters[m.group(1)] = int(m.group(2), 0)
    if not header or not counters:
        raise CounterParseError(f"perfquery output has no '# Port counters' block: {text[:200]!r}")
    missing = [name for name in ERROR_COUNTERS + TRAFFIC_COUNTERS if name not in counters]
    if missing:
        raise CounterParseError(f"perfquery output lacks {', '.join(missing)}: {text[:200]!r}")
    return counters


def check_settable(name: str, value: int) -> None:
    """Raise CounterError unless ibsim's PerformanceSet can set PortCounters `name` to `value`."""
    bits = SETTABLE_BITS.get(name)
    if bits is None:
        raise CounterError(f"counter {name!r} cannot be set in ibsim; these can: {', '.join(SETTABLE_BITS)}")
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 1 << bits:
        raise CounterError(f"{name} is a {bits}-bit counter: {value!r} is not in 0..{(1 << bits) - 1}")
