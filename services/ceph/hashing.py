"""Ceph's hashes, reimplemented bit for bit from the C sources (pure, 32-bit unsigned arithmetic).

- `str_hash_rjenkins`: `ceph_str_hash_rjenkins` (Bob Jenkins' lookup2), the default object-name
  hash of a pool (`object_hash rjenkins`).
- `crush_hash32_2` / `crush_hash32_3`: `crush_hash32_rjenkins1_{2,3}`, CRUSH's hash of
  (pg seed, pool) and of (x, item, r).
- `stable_mod`: `ceph_stable_mod`, which maps a hash onto `pg_num` PGs so that raising pg_num
  splits PGs instead of reshuffling them.

They are transcribed from Ceph's `src/common/ceph_hash.cc` and `src/crush/hash.c`; they have not
been checked against a live cluster's `ceph osd map`, so treat PG ids as Ceph-like, not Ceph-equal.
"""

from __future__ import annotations

import struct
from functools import lru_cache

MASK = 0xFFFFFFFF
_WORDS = struct.Struct("<3I")
CRUSH_HASH_SEED = 1315423911


# lookup2's mix: three rounds of the same three steps, with these shifts (>> for a and c's steps, << for b's)
_ROUNDS = ((13, 8, 13), (12, 16, 5), (3, 10, 15))


def _mix(a: int, b: int, c: int) -> tuple[int, int, int]:
    m = MASK
    for sa, sb, sc in _ROUNDS:
        a = ((a - b - c) & m) ^ (c >> sa)
        b = ((b - c - a) & m) ^ ((a << sb) & m)
        c = ((c - a - b) & m) ^ (b >> sc)
    return a, b, c


@lru_cache(maxsize=1 << 16)
def str_hash_rjenkins(data: bytes | str) -> int:
    """`ceph_str_hash_rjenkins`: lookup2 over the bytes, little-endian words, initial c = 0. Recent
    names are remembered (a write, its read and its removal hash the same name)."""
    k = data.encode() if isinstance(data, str) else data
    length = len(k)
    a = b = 0x9E3779B9
    c = 0
    i = 0
    m = MASK
    while length - i >= 12:
        x, y, z = _WORDS.unpack_from(k, i)
        a, b, c = _mix((a + x) & m, (b + y) & m, (c + z) & m)
        i += 12
    rest = k[i:]
    c = (c + length) & m
    # The tail: bytes 0-3 into a, 4-7 into b, 8-10 into c shifted by one byte (c's low byte is the length).
    a = (a + int.from_bytes(rest[0:4], "little")) & m
    b = (b + int.from_bytes(rest[4:8], "little")) & m
    c = (c + (int.from_bytes(rest[8:11], "little") << 8)) & m
    _, _, c = _mix(a, b, c)
    return c


def crush_hash32_2(a: int, b: int) -> int:
    a, b = a & MASK, b & MASK
    h = CRUSH_HASH_SEED ^ a ^ b
    x, y = 231232, 1232
    a, b, h = _mix(a, b, h)
    x, a, h = _mix(x, a, h)
    b, y, h = _mix(b, y, h)
    return h


def crush_hash32_3(a: int, b: int, c: int) -> int:
    a, b, c = a & MASK, b & MASK, c & MASK
    h = CRUSH_HASH_SEED ^ a ^ b ^ c
    x, y = 231232, 1232
    a, b, h = _mix(a, b, h)
    c, x, h = _mix(c, x, h)
    y, a, h = _mix(y, a, h)
    b, x, h = _mix(b, x, h)
    y, c, h = _mix(y, c, h)
    return h


def pg_num_mask(pg_num: int) -> int:
    """The smallest 2^n − 1 that covers pg_num − 1 (Ceph's `calc_pg_masks`)."""
    return (1 << max(pg_num - 1, 0).bit_length()) - 1


def stable_mod(x: int, b: int, bmask: int) -> int:
    """`ceph_stable_mod`: x mod b that stays stable while b grows towards the next power of two."""
    return x & bmask if (x & bmask) < b else x & (bmask >> 1)
