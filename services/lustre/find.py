"""`lfs find`: walk the namespace and keep entries matching name, size, stripe count, OST and type.

Numeric filters take `[+-]N` as lfs does: `+N` more than N, `-N` less than N, `N` exactly N.
Sizes take lfs's units (`c`/none bytes, `k`, `M`, `G`, `T`, `P`) and compare as `find` does: with
a unit, the file size is rounded up to whole units first (so `-size -1M` matches only empty files).
"""

from __future__ import annotations

import fnmatch
import re
import stat
from dataclasses import dataclass

from services.lustre.errors import LustreError
from services.lustre.namespace import Inode, Namespace

_SIZE_RE = re.compile(r"^([+-]?)(\d+)([ckMGTP]?)$", re.IGNORECASE)
_NUM_RE = re.compile(r"^([+-]?)(\d+)$")
_UNITS = {"": 1, "c": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4, "p": 1024**5}


@dataclass(frozen=True)
class Compare:
    sign: str  # "+", "-" or ""
    value: int
    unit: int = 1

    def matches(self, n: int) -> bool:
        units = -(-n // self.unit)  # round up to whole units, as find does
        if self.sign == "+":
            return units > self.value
        if self.sign == "-":
            return units < self.value
        return units == self.value


def parse_size_filter(text: str) -> Compare:
    m = _SIZE_RE.match(text.strip())
    if not m:
        raise LustreError("EINVAL", f"bad --size {text!r}: expected [+-]N with an optional k/M/G/T/P unit")
    return Compare(m[1], int(m[2]), _UNITS[m[3].lower()])


def parse_count_filter(text: str | int, what: str = "--stripe-count") -> Compare:
    m = _NUM_RE.match(str(text).strip())
    if not m:
        raise LustreError("EINVAL", f"bad {what} {text!r}: expected [+-]N")
    return Compare(m[1], int(m[2]))


TYPES = {"f": stat.S_IFREG, "d": stat.S_IFDIR, "l": stat.S_IFLNK, "p": stat.S_IFIFO, "s": stat.S_IFSOCK,
         "c": stat.S_IFCHR, "b": stat.S_IFBLK}


@dataclass(frozen=True)
class FindQuery:
    name: str | None = None  # glob on the last path component
    size: Compare | None = None
    stripe_count: Compare | None = None
    ost: int | None = None  # files with an object on this OST index
    type: str | None = None  # find's letters: f d l p s c b

    def matches(self, path: str, node: Inode) -> bool:
        if self.type is not None and stat.S_IFMT(node.st_mode) != TYPES[self.type]:
            return False
        if self.name is not None and not fnmatch.fnmatchcase(path.rsplit("/", 1)[-1] or "/", self.name):
            return False
        if self.size is not None and (node.is_dir or not self.size.matches(node.size)):
            return False
        if self.stripe_count is not None:
            if node.layout is None or not self.stripe_count.matches(node.layout.stripe_count):
                return False
        if self.ost is not None and (node.layout is None or self.ost not in node.layout.osts):
            return False
        return True


def find(ns: Namespace, start: str, query: FindQuery) -> list[str]:
    """Matching paths under `start` (inside the filesystem), in walk order."""
    if query.type is not None and query.type not in TYPES:
        raise LustreError("EINVAL", f"bad --type {query.type!r}: use one of {' '.join(TYPES)}")
    if query.ost is not None and query.ost not in ns.osts:
        raise LustreError("EINVAL", f"--ost {query.ost}: no such OST in {ns.fsname}")
    return [p for p, n in ns.walk(start) if query.matches(p, n)]


def render(paths: list[str], mount: str) -> str:
    """One path per line, prefixed with the client mount point as `lfs find /mnt/lustre` prints."""
    base = mount.rstrip("/")
    return "".join((f"{base}{p}" if p != "/" else mount) + "\n" for p in paths)
