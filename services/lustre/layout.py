"""Striping: `lfs setstripe` rules, object placement across OSTs, and RAID0 byte-range mapping.

Rules (FIDELITY.md §5): `-c COUNT` 0 = the filesystem default (1), -1 = every usable OST, more
than there are usable OSTs is capped as Lustre caps it; `-S SIZE` a multiple of 64 KiB, below
4 GiB, 0 = default 4 MiB; `-i INDEX` -1 = the MDS chooses, otherwise an existing OST index.
Unset fields of a request take the parent directory's default, then the filesystem's.

Placement follows Lustre's LOD allocator in shape: when free space is balanced (spread under
`qos_threshold_rr`, 17 %), round-robin over an order that alternates OSSs; otherwise weighted
by free space (here a deterministic smooth weighted round-robin, so that placement is
replayable). New objects never go to an inactive, read-only or full OST, nor to a degraded one
while any healthy OST can take them; the objects of one file are on distinct OSTs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from services.lustre.errors import LustreError
from services.lustre.ost import OstState

KiB = 1024
MiB = 1024**2
GiB = 1024**3

STRIPE_SIZE_UNIT = 64 * KiB  # LOV_MIN_STRIPE_SIZE: sizes are multiples of this
DEFAULT_STRIPE_SIZE = 4 * MiB
DEFAULT_STRIPE_COUNT = 1
MAX_STRIPE_SIZE_EXCLUSIVE = 4 * GiB  # stripe size must be less than 4 GiB
MAX_STRIPE_COUNT = 2000  # LOV_MAX_STRIPE_COUNT
QOS_THRESHOLD_RR = 0.17  # lod.*.qos_threshold_rr default
PATTERN = "raid0"

_SIZE_RE = re.compile(r"^\s*(\d+)\s*([bkmgtpeBKMGTPE]?)\s*$")
_UNITS = {"": 1, "b": 512, "k": KiB, "m": MiB, "g": GiB, "t": 1024**4, "p": 1024**5, "e": 1024**6}


def parse_size(text: str | int, what: str = "size") -> int:
    """`llapi_parse_size`: N with an optional binary suffix k/M/G/T/P/E (b = 512-byte blocks)."""
    if isinstance(text, int):
        return text
    m = _SIZE_RE.match(text)
    if not m:
        raise LustreError("EINVAL", f"bad {what} {text!r}: expected a number with an optional k/M/G/T suffix")
    return int(m[1]) * _UNITS[m[2].lower()]


@dataclass(frozen=True)
class StripeSpec:
    """What `lfs setstripe -c COUNT -S SIZE -i INDEX` asks for; 0/0/-1 mean "not set"."""

    count: int = 0
    size: int = 0
    index: int = -1

    @classmethod
    def parse(cls, count: str | int = 0, size: str | int = 0, index: str | int = -1) -> StripeSpec:
        try:
            c = int(count)
            i = int(index)
        except ValueError:
            raise LustreError("EINVAL", f"bad stripe count {count!r} or index {index!r}: expected integers") from None
        spec = cls(c, parse_size(size, "stripe size"), i)
        spec.validate()
        return spec

    def validate(self, ost_count: int | None = None) -> None:
        """Refuse what `lfs setstripe` refuses (EINVAL); `ost_count` also checks the index exists."""
        if self.count < -1:
            raise LustreError("EINVAL", f"invalid stripe count {self.count}: use -1 (all OSTs), 0 (default) or 1..")
        if self.count > MAX_STRIPE_COUNT:
            raise LustreError("EINVAL", f"invalid stripe count {self.count}: the maximum is {MAX_STRIPE_COUNT}")
        if self.size < 0:
            raise LustreError("EINVAL", f"invalid stripe size {self.size}: must not be negative")
        if self.size % STRIPE_SIZE_UNIT:
            raise LustreError(
                "EINVAL", f"invalid stripe size {self.size}: must be an even multiple of 64 KiB ({STRIPE_SIZE_UNIT})"
            )
        if self.size >= MAX_STRIPE_SIZE_EXCLUSIVE:
            raise LustreError("EINVAL", f"invalid stripe size {self.size}: must be less than 4 GiB")
        if self.index < -1:
            raise LustreError("EINVAL", f"invalid stripe offset {self.index}: use -1 (MDS chooses) or an OST index")
        if ost_count is not None and self.index >= ost_count:
            raise LustreError(
                "EINVAL", f"invalid stripe offset {self.index}: no such OST (indices 0..{ost_count - 1})"
            )

    def inherit(self, parent: StripeSpec | None) -> StripeSpec:
        """Fill the fields this spec leaves unset from `parent` (a directory default)."""
        if parent is None:
            return self
        return StripeSpec(
            self.count or parent.count,
            self.size or parent.size,
            self.index if self.index != -1 else parent.index,
        )


@dataclass(frozen=True)
class StripeObject:
    """One object of a layout: the OST it lives on, its object id there, and the OST's sequence."""

    ost: int
    objid: int
    seq: int


@dataclass(frozen=True)
class Extent:
    """A piece of a file byte range that lies in one object (one stripe chunk)."""

    file_offset: int
    length: int
    slot: int  # position of the object in the layout (0..stripe_count-1)
    ost: int
    objid: int
    object_offset: int


@dataclass(frozen=True)
class Layout:
    """A file's resolved RAID0 layout, as the MDT stores it in the `lustre.lov` xattr."""

    stripe_size: int
    objects: tuple[StripeObject, ...]
    gen: int = 0
    pattern: str = PATTERN

    def __post_init__(self) -> None:
        if not self.objects:
            raise LustreError("EINVAL", "a layout needs at least one object")
        if self.stripe_size <= 0 or self.stripe_size % STRIPE_SIZE_UNIT:
            raise LustreError("EINVAL", f"stripe size {self.stripe_size} is not a positive multiple of 64 KiB")

    @property
    def stripe_count(self) -> int:
        return len(self.objects)

    @property
    def stripe_offset(self) -> int:
        """The OST of the first object (`lmm_stripe_offset`)."""
        return self.objects[0].ost

    @property
    def osts(self) -> tuple[int, ...]:
        return tuple(o.ost for o in self.objects)

    def locate(self, offset: int) -> tuple[int, int]:
        """(slot, object offset) of file byte `offset`."""
        if offset < 0:
            raise LustreError("EINVAL", f"file offset {offset} is negative")
        stripe_no, within = divmod(offset, self.stripe_size)
        row, slot = divmod(stripe_no, self.stripe_count)
        return slot, row * self.stripe_size + within

    def extents(self, offset: int, length: int) -> list[Extent]:
        """Split the byte range [offset, offset+length) into per-object pieces, in file order."""
        if offset < 0 or length < 0:
            raise LustreError("EINVAL", f"byte range offset={offset} length={length} must not be negative")
        pieces: list[Extent] = []
        pos, end = offset, offset + length
        while pos < end:
            slot, obj_off = self.locate(pos)
            n = min(end, (pos // self.stripe_size + 1) * self.stripe_size) - pos
            o = self.objects[slot]
            pieces.append(Extent(pos, n, slot, o.ost, o.objid, obj_off))
            pos += n
        return pieces

    def object_size(self, slot: int, file_size: int) -> int:
        """Bytes object `slot` holds when the file is `file_size` bytes long (sparse holes excluded)."""
        if not 0 <= slot < self.stripe_count:
            raise LustreError("EINVAL", f"slot {slot} outside 0..{self.stripe_count - 1}")
        full_rows, rest = divmod(file_size, self.stripe_size * self.stripe_count)
        size = full_rows * self.stripe_size
        size += min(self.stripe_size, max(0, rest - slot * self.stripe_size))
        return size

def resolve(spec: StripeSpec, default: StripeSpec | None = None) -> StripeSpec:
    """The effective request: `spec`, then the directory `default`, then the filesystem default."""
    eff = spec.inherit(default)
    return StripeSpec(eff.count or DEFAULT_STRIPE_COUNT, eff.size or DEFAULT_STRIPE_SIZE, eff.index)


def rr_order(osts: Sequence[OstState]) -> list[int]:
    """OST indices ordered so that consecutive stripes land on different OSSs (LOD's rr order)."""
    by_oss: dict[str, list[int]] = {}
    for o in sorted(osts, key=lambda o: o.index):
        by_oss.setdefault(o.oss, []).append(o.index)
    groups = [by_oss[k] for k in sorted(by_oss)]
    order: list[int] = []
    for i in range(max((len(g) for g in groups), default=0)):
        order.extend(g[i] for g in groups if i < len(g))
    return order


@dataclass
class Allocator:
    """The MDS's object allocator (LOD/QoS). Deterministic: its state is the round-robin cursor and
    the weighted round-robin credits, both replayable."""

    qos_threshold_rr: float = QOS_THRESHOLD_RR
    rr_cursor: int = 0
    credits: dict[int, float] = field(default_factory=dict)

    def choose(self, spec: StripeSpec, osts: Sequence[OstState]) -> list[int]:
        """OST indices for a new file's objects. `spec` is resolved (count ≥ 1 or -1, size set).

        Raises EINVAL for an unknown `-i` index and ENOSPC when no OST can take a new object.
        """
        known = {o.index: o for o in osts}
        if spec.index >= 0 and spec.index not in known:
            top = max(known) if known else -1
            raise LustreError("EINVAL", f"invalid stripe offset {spec.index}: no such OST (indices 0..{top})")
        usable = [o for o in osts if o.usable_for_new_objects]
        if not usable:  # as LOD's later passes: a degraded OST is better than no file at all
            usable = [o for o in osts if o.active and not o.readonly and not o.full]
        if not usable:
            raise LustreError(
                "ENOSPC", f"no OST can take new objects ({len(osts)} OSTs: all inactive, degraded or full)"
            )
        want = len(usable) if spec.count == -1 else min(spec.count, len(usable))
        if spec.index >= 0:
            return self._specific(spec.index, want, usable)
        if self._balanced(usable):
            return self._round_robin(want, usable)
        return self._weighted(want, usable)

    def _balanced(self, usable: Sequence[OstState]) -> bool:
        avails = [o.avail_bytes for o in usable]
        top = max(avails)
        return top == 0 or (top - min(avails)) <= self.qos_threshold_rr * top

    def _specific(self, start: int, want: int, usable: Sequence[OstState]) -> list[int]:
        """`-i INDEX`: the first object on INDEX (or the next usable one after it), then ascending."""
        indices = sorted(o.index for o in usable)
        first = next((i for i, idx in enumerate(indices) if idx >= start), 0)
        return [indices[(first + k) % len(indices)] for k in range(want)]

    def _round_robin(self, want: int, usable: Sequence[OstState]) -> list[int]:
        order = rr_order(usable)
        start = self.rr_cursor % len(order)
        self.rr_cursor = (start + want) % len(order)
        return [order[(start + k) % len(order)] for k in range(want)]

    def _weighted(self, want: int, usable: Sequence[OstState]) -> list[int]:
        """Smooth weighted round-robin by free bytes: OSTs are chosen in proportion to their space."""
        weights = {o.index: float(o.avail_bytes) for o in usable}
        chosen: list[int] = []
        for _ in range(want):
            candidates = [i for i in sorted(weights) if i not in chosen]
            total = sum(weights[i] for i in candidates)
            for i in candidates:
                self.credits[i] = self.credits.get(i, 0.0) + weights[i]
            best = max(candidates, key=lambda i: (self.credits[i], -i))
            self.credits[best] -= total
            chosen.append(best)
        return chosen
