"""Placement groups: which OSD holds which shard, the state Ceph would report, recovery and scrub.

A PG of a pool with `size` shards (k+m, or replicas) keeps, per position, the OSD serving that
shard (`acting`), the OSD CRUSH wants there (`up`, down OSDs removed), backfill targets where the
two differ, and per position the objects whose shard there is stale (written while it was down).

State, from how many acting shards are on up OSDs (n), with Ceph's semantics (FIDELITY §4):
- n = size, nothing missing, no backfill → active+clean;
- min_size ≤ n < size → active+undersized+degraded: client I/O continues;
- k ≤ n < min_size → undersized+degraded+peered: data intact, client I/O blocks;
- n < k → down (a holder of data is down and may return) or incomplete (none will): the PG's
  objects are unfound;
- an up OSD back with stale objects → active+recovering+degraded until `recover` rebuilds them;
- CRUSH moves a position (an OSD marked out, a weight change) → remapped+backfilling: the old OSD
  keeps serving if it is up (objects misplaced), else the position is undersized until backfilled;
- a deep scrub that finds a chunk whose CRC-32 differs from the one recorded at write time (Ceph
  keeps per-shard CRCs in the EC hash info) → +inconsistent, until `repair` rewrites it.
State names print in Ceph's order (`pg_state_string`), e.g. "active+undersized+degraded+remapped+backfilling".
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import IntFlag

import crc32c

from services.ceph.chunkstore import ChunkStore
from services.ceph.errors import CephError, InsufficientChunks, PgUnavailable
from services.ceph.pool import Codec, PgId, Pool

CRUSH_ITEM_NONE = 2147483647  # how Ceph prints an empty EC position in up/acting sets
IsUp = Callable[[int], bool]


class PgState(IntFlag):
    ACTIVE = 1 << 0
    CLEAN = 1 << 1
    RECOVERING = 1 << 2
    DOWN = 1 << 3
    UNDERSIZED = 1 << 4
    DEGRADED = 1 << 5
    REMAPPED = 1 << 6
    SCRUBBING = 1 << 7
    DEEP = 1 << 8
    INCONSISTENT = 1 << 9
    REPAIR = 1 << 10
    BACKFILLING = 1 << 11
    INCOMPLETE = 1 << 12
    STALE = 1 << 13
    PEERED = 1 << 14


# Ceph's pg_state_string order (src/osd/osd_types.cc).
_ORDER = (
    ("active", PgState.ACTIVE), ("clean", PgState.CLEAN), ("recovering", PgState.RECOVERING),
    ("down", PgState.DOWN), ("undersized", PgState.UNDERSIZED), ("degraded", PgState.DEGRADED),
    ("remapped", PgState.REMAPPED), ("scrubbing", PgState.SCRUBBING), ("deep", PgState.DEEP),
    ("inconsistent", PgState.INCONSISTENT), ("repair", PgState.REPAIR), ("backfilling", PgState.BACKFILLING),
    ("incomplete", PgState.INCOMPLETE), ("stale", PgState.STALE), ("peered", PgState.PEERED),
)


@functools.cache   # (the monitor names every PG's state ten times a second; there are few states)
def state_string(state: PgState) -> str:
    return "+".join(name for name, flag in _ORDER if state & flag) or "unknown"


@dataclass(frozen=True)
class ObjectInfo:
    name: str
    size: int
    crcs: tuple[int, ...]  # CRC-32C of each shard's chunk at write time

    def chunk_key(self, pgid: PgId, shard: int) -> tuple[str, str, int]:
        return (str(pgid), self.name, shard)


@dataclass(frozen=True)
class ScrubError:
    pgid: PgId
    object: str
    shard: int
    osd: int
    problem: str  # "missing" or "crc mismatch"


def chunk_crc(data: bytes) -> int:
    """A chunk's checksum: CRC-32C, BlueStore's default `bluestore_csum_type` (SSE4.2 where the
    CPU has it, about 3x zlib's CRC-32)."""
    return crc32c.crc32c(data)


@dataclass
class PlacementGroup:
    pool: Pool
    pgid: PgId
    acting: list[int | None]
    up: list[int | None]
    objects: dict[str, ObjectInfo] = field(default_factory=dict)
    missing: dict[int, set[str]] = field(default_factory=dict)  # position → stale objects
    targets: dict[int, int] = field(default_factory=dict)  # position → backfill target OSD
    backfilled: dict[int, set[str]] = field(default_factory=dict)  # position → objects copied to target
    holders: list[int | None] = field(default_factory=list)  # last OSD with a complete shard per position
    inconsistent: list[ScrubError] = field(default_factory=list)

    @classmethod
    def create(cls, pool: Pool, pgid: PgId, placement: Sequence[int | None]) -> PlacementGroup:
        p = list(placement)
        return cls(pool, pgid, list(p), list(p), holders=list(p))

    # -- peering -----------------------------------------------------------------------------

    def peer(self, placement: Sequence[int | None], is_up: IsUp) -> None:
        """Take a new CRUSH placement (after an OSD-map change) and re-derive acting and targets."""
        self.up = [o if o is not None and is_up(o) else None for o in placement]
        for pos, want in enumerate(self.up):
            cur = self.acting[pos]
            if want is None or want == cur:
                if want == cur and pos in self.targets:  # CRUSH came back to the serving OSD
                    self._drop_target(pos)
                continue
            if self.targets.get(pos) == want:
                continue
            self._drop_target(pos)
            if cur is not None and is_up(cur):
                self.targets[pos] = want  # old OSD serves while the new one fills (pg_temp)
            else:
                self.acting[pos] = None  # nothing serves this shard until backfill completes
                self.targets[pos] = want
            self.backfilled[pos] = set()

    def _drop_target(self, pos: int) -> None:
        self.targets.pop(pos, None)
        self.backfilled.pop(pos, None)

    def available(self, is_up: IsUp) -> list[int]:
        """Positions whose acting OSD is up."""
        return [p for p, o in enumerate(self.acting) if o is not None and is_up(o)]

    def state(self, is_up: IsUp) -> PgState:
        size, k, min_size = self.pool.size, self.pool.k, self.pool.min_size
        avail = self.available(is_up)
        n = len(avail)
        s = PgState(0)
        if n == 0 and self.objects:
            s |= PgState.STALE
        if n < k:
            waiting = [self.holders[p] for p in range(size) if p not in avail and self.holders[p] is not None]
            s |= PgState.DOWN if any(o is not None and not is_up(o) for o in waiting) else PgState.INCOMPLETE
            return s | self._flags(is_up, avail)
        s |= PgState.ACTIVE if n >= min_size else PgState.PEERED
        if n < size:
            s |= PgState.UNDERSIZED | PgState.DEGRADED
        if any(self.missing.get(p) for p in avail):
            s |= PgState.DEGRADED | PgState.RECOVERING
        if n == size and not s & PgState.DEGRADED and not self.targets:
            s |= PgState.CLEAN
        return s | self._flags(is_up, avail)

    def _flags(self, is_up: IsUp, avail: list[int]) -> PgState:
        s = PgState(0)
        if self.targets:
            s |= PgState.REMAPPED
            if any(is_up(t) for t in self.targets.values()) and len(avail) >= self.pool.k:
                s |= PgState.BACKFILLING
        if self.inconsistent:
            s |= PgState.INCONSISTENT
        return s

    # -- counts for status -------------------------------------------------------------------

    def readable_shards(self, name: str, is_up: IsUp) -> list[int]:
        return [p for p in self.available(is_up) if name not in self.missing.get(p, ())]

    def degraded_copies(self, is_up: IsUp) -> int:
        """Object shards (copies) that are not where they should be readable: Ceph's 'degraded'."""
        return sum(self.pool.size - len(self.readable_shards(name, is_up)) for name in self.objects)

    def misplaced_copies(self, is_up: IsUp) -> int:
        """Shards readable on an up OSD that CRUSH wants elsewhere and backfill has not moved yet."""
        n = 0
        for pos in self.targets:
            cur = self.acting[pos]
            if cur is not None and is_up(cur):
                n += sum(1 for name in self.objects if name not in self.backfilled.get(pos, ()))
        return n

    def unfound(self, is_up: IsUp) -> list[str]:
        return sorted(n for n in self.objects if len(self.readable_shards(n, is_up)) < self.pool.k)

    def stored_bytes(self) -> int:
        return sum(o.size for o in self.objects.values())

    # -- client I/O --------------------------------------------------------------------------

    def require_active(self, is_up: IsUp, op: str) -> None:
        # Active is `min_size` (>= k) shards up: counted directly on every object operation, the full
        # state (IntFlag arithmetic, slow in Python) built only to say why not.
        n = len(self.available(is_up))
        if n < self.pool.min_size or n < self.pool.k:
            s = self.state(is_up)
            why = (f"{n} of {self.pool.size} shards available, min_size {self.pool.min_size}; "
                   f"{op} blocks until the PG is active")
            raise PgUnavailable(str(self.pgid), state_string(s), why)

    def write(self, name: str, data: bytes, codec: Codec, store: ChunkStore, is_up: IsUp) -> ObjectInfo:
        """Write (or overwrite) an object: needs an active PG; shards on down OSDs become missing."""
        self.require_active(is_up, "write")
        chunks = codec.encode(data)
        info = ObjectInfo(name, len(data), tuple(chunk_crc(c) for c in chunks))
        plan = self.write_plan(is_up)
        for pos, osd in plan:
            store.put(osd, info.chunk_key(self.pgid, pos), chunks[pos])
        self.record_write(info, plan)
        return info

    def write_plan(self, is_up: IsUp) -> tuple[tuple[int, int], ...]:
        """Where a write puts each shard now, as (position, OSD): the acting OSD if it is up, and the
        backfill target too if it is up. A client that writes the chunks itself (RGW, as librados does)
        follows the plan; the write is recorded only if the plan is still the PG's (`record_write`)."""
        plan = [(pos, osd) for pos, osd in enumerate(self.acting) if osd is not None and is_up(osd)]
        plan += [(pos, t) for pos, t in sorted(self.targets.items()) if is_up(t)]
        return tuple(plan)

    def record_write(self, info: ObjectInfo, plan: tuple[tuple[int, int], ...]) -> None:
        """The object's chunks were written as `plan` says: acting positions not in it are missing
        the object (their OSD down), targets in it hold it."""
        written = set(plan)
        name = info.name
        for pos, osd in enumerate(self.acting):
            if osd is None:
                continue
            if (pos, osd) in written:
                self.missing.get(pos, set()).discard(name)
            else:
                self.missing.setdefault(pos, set()).add(name)
        for pos, target in self.targets.items():
            if (pos, target) in written:
                self.backfilled.setdefault(pos, set()).add(name)
        self.objects[name] = info

    def read(self, name: str, codec: Codec, store: ChunkStore, is_up: IsUp) -> bytes:
        """Read an object from the first k good shards (data shards first, as Ceph reads; chunks failing
        their CRC are skipped, as EIO, and the next shard is read instead)."""
        info = self.objects.get(name)
        if info is None:
            raise CephError("NOT_FOUND", f"object {name!r} not in pg {self.pgid}")
        self.require_active(is_up, "read")
        chunks = self._good_chunks(info, store, is_up, enough=self.pool.k)
        if len(chunks) < self.pool.k:
            raise InsufficientChunks(len(chunks), self.pool.k, self.pool.size, f"object {name!r} in pg {self.pgid}")
        return codec.decode(chunks, info.size)

    def _good_chunks(self, info: ObjectInfo, store: ChunkStore, is_up: IsUp,
                     enough: int | None = None) -> dict[int, bytes]:
        out: dict[int, bytes] = {}
        for pos in self.readable_shards(info.name, is_up):
            if enough is not None and len(out) >= enough:
                break
            self._take_if_good(out, pos, info, store)
        if len(out) < self.pool.k:
            # Too few: ask the shards marked stale too, as peering asks every OSD what it holds. A chunk
            # with the CRC recorded at write time is the one written (it landed after it was given up on).
            for pos in self.available(is_up):
                if pos not in out and info.name in self.missing.get(pos, ()):
                    self._take_if_good(out, pos, info, store)
        return out

    def _take_if_good(self, out: dict[int, bytes], pos: int, info: ObjectInfo, store: ChunkStore) -> None:
        osd = self.acting[pos]
        assert osd is not None
        data = store.get(osd, info.chunk_key(self.pgid, pos))
        if data is not None and chunk_crc(data) == info.crcs[pos]:
            out[pos] = data

    # -- recovery and backfill ---------------------------------------------------------------

    def recover(self, codec: Codec, store: ChunkStore, is_up: IsUp, max_objects: int | None = None) -> int:
        """Rebuild stale shards and fill backfill targets; returns the object shards written.

        Runs while ≥ k shards are readable (Ceph allows EC recovery below min_size). A target whose
        every object is copied joins the acting set, and the old OSD's chunks are removed."""
        budget = max_objects if max_objects is not None else 1 << 62
        done = 0
        if len(self.available(is_up)) < self.pool.k:
            return 0
        for pos in sorted(self.missing):
            osd = self.acting[pos]
            if osd is None or not is_up(osd):
                continue
            for name in sorted(self.missing[pos]):
                if done >= budget:
                    return done
                self._rebuild_onto(name, pos, osd, codec, store, is_up)
                self.missing[pos].discard(name)
                done += 1
        for pos, target in sorted(self.targets.items()):
            if not is_up(target):
                continue
            copied = self.backfilled.setdefault(pos, set())
            for name in sorted(set(self.objects) - copied):
                if done >= budget:
                    return done
                self._rebuild_onto(name, pos, target, codec, store, is_up)
                copied.add(name)
                done += 1
            old = self.acting[pos]
            if old is not None and old != target:
                for name in self.objects:
                    store.delete(old, self.objects[name].chunk_key(self.pgid, pos))
            self.acting[pos] = self.holders[pos] = target
            self.missing.pop(pos, None)
            self._drop_target(pos)
        self.missing = {p: s for p, s in self.missing.items() if s}
        return done

    def _rebuild_onto(self, name: str, pos: int, osd: int, codec: Codec, store: ChunkStore, is_up: IsUp) -> None:
        info = self.objects[name]
        good = self._good_chunks(info, store, is_up)  # stale shards are not readable, so not here
        if pos in good and self.acting[pos] != osd:  # backfill from the OSD still serving: a copy
            chunk = good[pos]
        else:
            if len(good) < self.pool.k:
                raise InsufficientChunks(len(good), self.pool.k, self.pool.size, f"object {name!r} in pg {self.pgid}")
            chunk = codec.rebuild(good, info.size, [pos])[pos]
        store.put(osd, info.chunk_key(self.pgid, pos), chunk)

    # -- scrub -------------------------------------------------------------------------------

    def deep_scrub(self, store: ChunkStore, is_up: IsUp) -> list[ScrubError]:
        """Read every readable shard of every object and check its CRC; found errors mark the PG
        inconsistent (they stay until repair)."""
        errors = []
        for name in sorted(self.objects):
            info = self.objects[name]
            for pos in self.readable_shards(name, is_up):
                osd = self.acting[pos]
                assert osd is not None
                data = store.get(osd, info.chunk_key(self.pgid, pos))
                if data is None:
                    errors.append(ScrubError(self.pgid, name, pos, osd, "missing"))
                elif chunk_crc(data) != info.crcs[pos]:
                    errors.append(ScrubError(self.pgid, name, pos, osd, "crc mismatch"))
        self.inconsistent = errors
        return errors

    def repair(self, codec: Codec, store: ChunkStore, is_up: IsUp) -> int:
        """`ceph pg repair`: rewrite each bad shard from the good ones, then re-scrub."""
        fixed = 0
        for err in self.deep_scrub(store, is_up):
            info = self.objects[err.object]
            good = {p: c for p, c in self._good_chunks(info, store, is_up).items() if p != err.shard}
            if len(good) < self.pool.k:
                continue
            chunk = codec.rebuild(good, info.size, [err.shard])[err.shard]
            store.put(err.osd, info.chunk_key(self.pgid, err.shard), chunk)
            fixed += 1
        self.deep_scrub(store, is_up)
        return fixed
