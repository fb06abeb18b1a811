"""InfiniBand partitions (P_Keys) as OpenSM configures them, and its `partitions.conf`. Pure: no I/O.

A partition is a P_Key (15 bits) and the end ports that are members of it, each as a *full* or
*limited* member (limited members can talk to full members only; the port's P_Key table holds the
key with bit 0x8000 set for a full member). OpenSM reads the file on every heavy sweep and programs
the P_Key tables of the member ports (and, for enforcement, of the switch ports facing them).

The default partition `Default=0x7fff` is always present, first and unchangeable: every end port a
full member, with IPoIB, as OpenSM runs without a partitions file (its man page, PARTITION
CONFIGURATION). Without it every port would drop to a limited member and hosts could no longer
reach each other over the default P_Key (0xffff), which QP1 management traffic uses too.

Syntax written (opensm(8)):  `Name=0xPKEY[, ipoib] : 0xPORTGUID=full, 0xPORTGUID=limited ;`
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Set
from dataclasses import dataclass, field

from emulator.errors import BadInput

DEFAULT_NAME = "Default"
DEFAULT_PKEY = 0x7FFF
MIN_PKEY, MAX_PKEY = 0x0001, 0x7FFE  # 0x0000 is invalid, 0x7fff is the default partition's
FULL_MEMBER_BIT = 0x8000
FULL, LIMITED = "full", "limited"
MEMBERSHIPS = (FULL, LIMITED)
# OpenSM's parser splits on ':', '=', ',', ';', '#' and white space; keep names to a safe alphabet.
_NAME = re.compile(r"^[A-Za-z0-9_.\-]{1,64}$")


class PartitionError(BadInput):
    """A partition (or a set of them) OpenSM must not be given; the message says what and why."""


@dataclass(frozen=True)
class Partition:
    """One partition: `members` are (port GUID, "full" | "limited"), in the order given."""

    name: str
    pkey: int
    members: tuple[tuple[int, str], ...] = field(default=())
    ipoib: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "members", tuple((int(g), str(m)) for g, m in self.members))

    @property
    def is_default(self) -> bool:
        return self.pkey == DEFAULT_PKEY

    def member_guids(self) -> set[int]:
        return {guid for guid, _ in self.members}


# The default partition: every end port (ALL) a full member. `members` is empty: it is not a list.
DEFAULT_PARTITION = Partition(DEFAULT_NAME, DEFAULT_PKEY, (), ipoib=True)


def check_partition(p: Partition, port_guids: Set[int]) -> None:
    """Raise PartitionError if `p` alone is not acceptable: its name, P_Key, members (each once,
    a port GUID of this fabric in `port_guids`, membership "full" or "limited")."""
    if not _NAME.match(p.name):
        raise PartitionError(f"partition name {p.name!r}: use 1-64 letters, digits, '_', '.' or '-'")
    if p.is_default or p.name == DEFAULT_NAME:
        if p != DEFAULT_PARTITION:
            raise PartitionError(f"the default partition {DEFAULT_NAME}={DEFAULT_PKEY:#06x} cannot be changed")
        return
    if isinstance(p.pkey, bool) or not isinstance(p.pkey, int):
        raise PartitionError(f"partition {p.name!r}: P_Key must be an integer, not {p.pkey!r}")
    if p.pkey & FULL_MEMBER_BIT and MIN_PKEY <= p.pkey & ~FULL_MEMBER_BIT <= MAX_PKEY:
        raise PartitionError(f"partition {p.name!r}: P_Key {p.pkey:#06x} has the full-member bit 0x8000 set; "
                             f"give {p.pkey & ~FULL_MEMBER_BIT:#06x} and the membership per member")
    if not MIN_PKEY <= p.pkey <= MAX_PKEY:
        raise PartitionError(f"partition {p.name!r}: P_Key {p.pkey:#x} is out of range "
                             f"{MIN_PKEY:#06x}-{MAX_PKEY:#06x}")
    seen: set[int] = set()
    for guid, membership in p.members:
        if membership not in MEMBERSHIPS:
            raise PartitionError(f"partition {p.name!r}: membership {membership!r} of {guid:#018x} "
                                 f"is not one of {', '.join(MEMBERSHIPS)}")
        if guid in seen:
            raise PartitionError(f"partition {p.name!r}: port GUID {guid:#018x} is listed twice")
        if guid not in port_guids:
            raise PartitionError(f"partition {p.name!r}: port GUID {guid:#018x} is not a port of this fabric")
        seen.add(guid)


def validate_partitions(partitions: Iterable[Partition], port_guids: Set[int]) -> list[Partition]:
    """The complete list OpenSM is to get: the default partition first, then `partitions` in
    order. Raises PartitionError on any bad partition, a duplicate name or a duplicate P_Key
    (OpenSM would silently merge partitions sharing a P_Key)."""
    out = [DEFAULT_PARTITION]
    names, pkeys = {DEFAULT_NAME: DEFAULT_PARTITION}, {DEFAULT_PKEY: DEFAULT_PARTITION}
    for p in partitions:
        check_partition(p, port_guids)
        if p == DEFAULT_PARTITION:
            continue  # listed again: it is always there anyway
        if p.name in names:
            raise PartitionError(f"partition name {p.name!r} is used twice")
        if p.pkey in pkeys:
            raise PartitionError(f"P_Key {p.pkey:#06x} of {p.name!r} is already {pkeys[p.pkey].name!r}'s")
        names[p.name], pkeys[p.pkey] = p, p
        out.append(p)
    return out


def with_partition(partitions: Iterable[Partition], new: Partition, port_guids: Set[int]) -> list[Partition]:
    """`partitions` plus `new` (validated together); raises PartitionError, changing nothing."""
    return validate_partitions([*partitions, new], port_guids)


def without_partition(partitions: Iterable[Partition], name: str) -> list[Partition]:
    """`partitions` less the one named `name`. The default partition cannot be deleted."""
    current = list(partitions)
    if name == DEFAULT_NAME:
        raise PartitionError(f"the default partition {DEFAULT_NAME}={DEFAULT_PKEY:#06x} cannot be deleted")
    if not any(p.name == name for p in current):
        raise PartitionError(f"no partition named {name!r}")
    return [p for p in current if p.name != name]


def render_partitions_conf(partitions: Iterable[Partition]) -> str:
    """OpenSM's partitions.conf for `partitions` (the default partition is always written, first).
    Call `validate_partitions` first: this only formats."""
    lines = ["# OpenSM partitions, written by clustertwin (services/fabric/partitions.py)",
             f"{DEFAULT_NAME}={DEFAULT_PKEY:#06x}, ipoib : ALL=full ;"]
    for p in partitions:
        if p.is_default:
            continue
        members = ", ".join(f"{guid:#018x}={membership}" for guid, membership in p.members)
        lines.append(f"{p.name}={p.pkey:#06x}{', ipoib' if p.ipoib else ''} :{' ' + members if members else ''} ;")
    return "\n".join(lines) + "\n"
