"""Lustre File Identifiers: `[SEQ:OID:VER]`, e.g. `[0x200000400:0x1:0x0]`.

The MDT hands clients sequences of `SEQ_WIDTH` object ids; normal files live in sequences from
`FIRST_NORMAL_SEQ` (0x200000400) on, and the root directory is `[0x200000007:0x1:0x0]`
(FID_SEQ_ROOT), as `lfs path2fid /mnt/lustre` shows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from services.lustre.errors import LustreError

FIRST_NORMAL_SEQ = 0x200000400
ROOT_SEQ = 0x200000007
SEQ_WIDTH = 0x20000  # LUSTRE_METADATA_SEQ_MAX_WIDTH: object ids per client sequence

_FID_RE = re.compile(r"^\[?(0x[0-9a-fA-F]+):(0x[0-9a-fA-F]+):(0x[0-9a-fA-F]+)\]?$")


@dataclass(frozen=True, order=True)
class Fid:
    seq: int
    oid: int
    ver: int = 0

    def __str__(self) -> str:
        return f"[{self.seq:#x}:{self.oid:#x}:{self.ver:#x}]"

    @classmethod
    def parse(cls, text: str) -> Fid:
        m = _FID_RE.match(text.strip())
        if not m:
            raise LustreError("EINVAL", f"{text!r} is not a FID like [0x200000400:0x1:0x0]")
        return cls(int(m[1], 16), int(m[2], 16), int(m[3], 16))


ROOT_FID = Fid(ROOT_SEQ, 1, 0)


@dataclass
class FidAllocator:
    """Hands out FIDs in order: oid 1..SEQ_WIDTH within a sequence, then the next sequence."""

    seq: int = FIRST_NORMAL_SEQ
    next_oid: int = 1

    def allocate(self) -> Fid:
        if self.next_oid > SEQ_WIDTH:
            self.seq += 1
            self.next_oid = 1
        fid = Fid(self.seq, self.next_oid, 0)
        self.next_oid += 1
        return fid
