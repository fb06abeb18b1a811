"""The gateway's storage: the bucket index and every RADOS write and read, with RGW's blocking semantics.

Every S3 operation (objects.py, buckets.py, multipart, copy_object, tagging, authz, ...) works through
a `Store` and nothing else of the gateway's. Buckets are an index: bucket records and one index entry
per object version are written to the replicated index pool (RGW keeps them as omap entries of
`.dir.<marker>`; here one small RADOS object per entry), and listings are served from the in-memory
copy (bucket_index.py). An object's data is a head RADOS object holding its first 4 MiB
(`rgw_max_chunk_size`) and 4 MiB tail objects (`rgw_obj_stripe_size`) in the EC data pool, named after
RGW's `<marker>__:<tag>_<key>` and `<marker>__shadow_.<tag>_<n>`. A fresh tag per upload makes an
overwrite atomic: new tails, new head and index entry are written first, the old RADOS objects are
removed after (RGW's GC).

RADOS I/O on an inactive PG blocks in real Ceph (RGW sets no `rados_osd_op_timeout`); the store waits
up to `op_timeout` seconds for the PG to come back, then raises 503 ServiceUnavailable — the backend is
unavailable, not the client too fast (that is SlowDown).
"""

from __future__ import annotations

import collections
import contextlib
import json
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import AbstractContextManager
from typing import Any, TypeVar

from services.ceph.cluster import Cluster
from services.ceph.errors import CephError
from services.ceph.rgw import checksums, rados, received, s3_xml
from services.ceph.rgw.bucket_index import Bucket, ObjectEntry, Upload, meta_name, new_version_id
from services.ceph.rgw.entity import check_md5
from services.ceph.rgw.group_call import GroupRemover
from services.ceph.rgw.s3_errors import S3Error
from services.ceph.rgw.users import User, Users
from services.ceph.rgw.wire import Part

T = TypeVar("T")
_FIELDS = {"tagging": "tags"}  # the `Bucket` field of a bucket attribute, where its name is not the attribute's
HEAD_SIZE = 4 << 20  # rgw_max_chunk_size
STRIPE_SIZE = 4 << 20  # rgw_obj_stripe_size
STRIPES_IN_FLIGHT = 4  # RADOS objects of one upload written, or of one GET read ahead, at once


class Store:
    """`rados_lock=False` for a cluster that is thread-safe itself (the daemon's, over the monitor):
    RADOS calls then run without the store's lock, so concurrent requests overlap their I/O."""

    def __init__(
        self, cluster: Cluster, users: Users, data_pool: str, index_pool: str, zone: str = "default",
        op_timeout: float = 30.0, poll: float = 0.05, clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time, sleep: Callable[[float], None] = time.sleep, rados_lock: bool = True,
    ) -> None:
        self.cluster, self.users = cluster, users
        self.data_pool, self.index_pool, self.zone = data_pool, index_pool, zone
        self.op_timeout, self.poll = op_timeout, poll
        self.clock, self.wall, self.sleep = clock, wall, sleep
        self.lock = threading.RLock()  # the in-memory index (and the cluster model) is not thread-safe
        self._rados_guard: AbstractContextManager[object] = self.lock if rados_lock else contextlib.nullcontext()
        self.buckets: dict[tuple[str, str], Bucket] = {}
        self.uploads: dict[tuple[str, str], dict[str, Upload]] = {}  # (tenant, bucket) → upload id → upload
        self.gc: list[tuple[str, str]] = []  # (pool, name) RADOS objects left to remove
        self.defer_gc = False   # True: what overwrites displace waits for a `gc_process` pass
        self.instance_id = secrets.randbelow(1 << 20)
        self._next_bucket = 1
        self._commit_locks = [threading.Lock() for _ in range(64)]
        # Removals of concurrent requests grouped, where RADOS calls run concurrently (over the monitor).
        self._remover = None if rados_lock else GroupRemover(self._remove_many)
        # Stripe writes and read-ahead; a request waits for its own, so one pool serves all of them.
        self._io = ThreadPoolExecutor(32, thread_name_prefix="rgw-rados")

    # -- RADOS with RGW's blocking semantics -------------------------------------------------

    def rados(self, what: str, fn: Callable[[], T]) -> T:
        deadline = self.clock() + self.op_timeout
        while True:
            with self._rados_guard:
                try:
                    return fn()
                except CephError as e:
                    if e.code != "UNAVAILABLE":
                        raise S3Error("InternalError", f"{what}: {e.message}") from None
                    err = e
            if self.clock() >= deadline:
                raise S3Error("ServiceUnavailable", f"{what}: {err.message}; waited {self.op_timeout:g} s")
            self.sleep(self.poll)

    def put(self, pool: str, name: str, data: bytes | memoryview) -> None:
        self.rados(f"write {pool}/{name}", lambda: self.cluster.put(pool, name, data))

    def remove(self, what: str, pool: str, name: str) -> None:
        self.rados(what, lambda: rados.remove(self.cluster, pool, name))

    def _read(self, name: str) -> bytes:
        return self.rados(f"read {self.data_pool}/{name}", lambda: self.cluster.get(self.data_pool, name))

    def _read_part(self, name: str, a: int, b: int, pieces: bool) -> Part:
        """Bytes a..b of RADOS object `name`; with `pieces` (the whole object is wanted), as the
        cluster's pieces where it gives them (its `get_pieces`: the daemon's, reading from the OSDs)."""
        get_pieces = getattr(self.cluster, "get_pieces", None) if pieces else None
        if get_pieces is not None:
            return self.rados(f"read {self.data_pool}/{name}", lambda: get_pieces(self.data_pool, name))  # type: ignore[no-any-return]
        data = self._read(name)
        return data if a == 0 and b == len(data) else memoryview(data)[a:b]

    def _holds(self, pool: str, name: str, data: bytes) -> bool | None:
        """Whether RADOS object `name` holds `data` now (one try: None when that cannot be known)."""
        try:
            with self._rados_guard:
                return bytes(self.cluster.get(pool, name)) == data
        except CephError as e:
            return False if e.code == "NOT_FOUND" else None

    def remove_later(self, objs: list[tuple[str, str]], gc: bool = False) -> None:
        """Remove RADOS objects now, in the request (a delete's, a failed upload's); what cannot be
        removed now stays for the next GC pass. `gc` (what an overwrite displaced) with `defer_gc`:
        left to the next `gc_process` pass (the daemon's gc thread), off the request's path."""
        with self.lock:
            self.gc.extend(objs)
        if not (gc and self.defer_gc):
            self.gc_process()

    def gc_process(self) -> int:
        """A GC pass (`radosgw-admin gc process`): remove what is queued; what cannot be removed now (its
        PG not active) stays for the next pass. The removals run outside the store's lock (under the
        RADOS guard), together with those of concurrent requests (group_call.py). Returns how many
        were removed."""
        with self.lock:
            todo, self.gc = self.gc, []
        if not todo:
            return 0
        left = self._remover.remove(todo) if self._remover else self._remove_many(todo)
        if left:
            with self.lock:
                self.gc.extend(left)
        return len(todo) - len(left)

    def _remove_many(self, objs: list[tuple[str, str]]) -> list[tuple[str, str]]:
        with self._rados_guard:
            return rados.remove_many(self.cluster, objs)

    # -- bucket attributes in the index pool -------------------------------------------------

    def configure(self, b: Bucket, attr: str, value: object, record: bytes | None) -> None:
        """Set one of a bucket's configurations (versioning, acl, policy, tagging, lifecycle) to `value`:
        its index-pool object first (`record`; None removes it), then the in-memory bucket, so a refused
        write changes nothing."""
        if record is None:
            self.drop_meta(b, attr)
        else:
            self.put(self.index_pool, meta_name(b.tenant, b.name, attr), record)
        with self.lock:
            setattr(b, _FIELDS.get(attr, attr), value)

    def drop_meta(self, b: Bucket, *attrs: str) -> None:
        self.remove_later([(self.index_pool, meta_name(b.tenant, b.name, attr)) for attr in attrs])

    def new_marker(self) -> str:
        """A new bucket's marker: its index and data objects are named after it."""
        with self.lock:
            marker = f"{self.zone}.{self.instance_id}.{self._next_bucket}"
            self._next_bucket += 1
        return marker

    def bucket(self, user: User, name: str) -> Bucket:
        """The bucket a request names, or NoSuchBucket; whether `user` may use it is `authz.authorize`'s call."""
        tenant, _, bare = name.rpartition(":")  # RGW lets `tenant:bucket` name another tenant's bucket
        b = self.buckets.get((tenant if ":" in name else user.tenant, bare))
        if b is None:
            raise S3Error("NoSuchBucket", "the specified bucket does not exist", f"/{name}", BucketName=name)
        return b

    def uploads_of(self, b: Bucket) -> dict[str, Upload]:
        """The multipart uploads in progress in bucket `b` (hold `lock` to change them)."""
        return self.uploads.setdefault((b.tenant, b.name), {})

    # -- object data -------------------------------------------------------------------------

    def rados_objects(self, bucket: str, key: str, tenant: str = "") -> list[str]:
        """The data-pool RADOS objects holding an object: head first, then tails (for tests and admin)."""
        e = self.buckets[(tenant, bucket)].objects[key]
        return [name for name, _ in e.pieces]

    def write_data_md5(self, head: str, shadow: str, body: bytes,
                       headers: dict[str, str]) -> tuple[str, list[tuple[str, int]]]:
        """`write_data` and the body's MD5 (hex: the ETag), a Content-MD5 header checked before anything
        is written. Without one, a big body's MD5 is computed on another core while it is striped (or
        was, as it arrived: received.py)."""
        if "content-md5" in headers or len(body) < checksums.PARALLEL_MIN:
            md5 = received.digest(body, "md5")
            check_md5(headers, md5)
            return md5.hex(), self.write_data(head, shadow, body)
        pending = received.pending(body, "md5") or checksums.alongside(received.digest, body, "md5")
        try:
            pieces = self.write_data(head, shadow, body)
        except S3Error:
            pending.cancel()
            raise
        return pending.result().hex(), pieces

    def write_data(self, head: str, shadow: str, body: bytes) -> list[tuple[str, int]]:
        """Stripe `body` into the data pool as RGW does: `head` holds the first 4 MiB
        (rgw_max_chunk_size), `shadow_1`, `shadow_2`, ... the following 4 MiB stripes (rgw_obj_stripe_size).
        Up to `STRIPES_IN_FLIGHT` stripes are written at once (RGW's `rgw_put_obj_min_window_size` of
        in-flight RADOS writes), so a big object's stripes overlap their EC encoding and OSD I/O; the
        object becomes visible only with its index entry, written after all of them. On failure what
        was written is freed and the first error raised."""
        n_tails = -(-max(len(body) - HEAD_SIZE, 0) // STRIPE_SIZE)
        pieces = [(head, min(len(body), HEAD_SIZE))]
        for i in range(n_tails):
            off = HEAD_SIZE + i * STRIPE_SIZE
            pieces.append((f"{shadow}_{i + 1}", min(STRIPE_SIZE, len(body) - off)))
        view = memoryview(body)  # stripes go to the EC codec as views: no copy of each 4 MiB
        spans, off = [], 0
        for name, n in pieces:
            spans.append((name, view[off: off + n]))
            off += n
        if len(spans) == 1:
            self.put(self.data_pool, head, spans[0][1])
            return pieces
        todo = collections.deque(spans)
        flying: collections.deque[tuple[str, Future[None]]] = collections.deque()
        written: list[tuple[str, str]] = []
        error: S3Error | None = None
        while todo or flying:
            while todo and error is None and len(flying) < STRIPES_IN_FLIGHT:
                name, data = todo.popleft()
                flying.append((name, self._io.submit(self.put, self.data_pool, name, data)))
            name, fut = flying.popleft()
            try:
                fut.result()
                written.append((self.data_pool, name))
            except S3Error as e:
                error = error or e
            if error is not None:
                todo.clear()   # write no more; wait for what is in flight, then free it
        if error is not None:
            self.remove_later(written)  # nothing of a failed upload stays visible
            raise error
        return pieces

    def read_data(self, pieces: list[tuple[str, int]], first: int, length: int) -> bytes:
        parts = list(self.iter_parts(pieces, first, length))
        if len(parts) == 1 and isinstance(parts[0], bytes):
            return parts[0]
        return b"".join(parts)  # one copy of the range, whatever the number of stripes

    def iter_parts(self, pieces: list[tuple[str, int]], first: int, length: int,
                   gather: bool = False) -> Iterator[Part]:
        """Bytes `first`..`first + length` of an object as the RADOS objects hold them, in order. The
        next `STRIPES_IN_FLIGHT` RADOS objects are read ahead while one is sent (RGW's
        `rgw_get_obj_window_size`), no more, so a slow client holds a few stripes, not the object.
        `gather`: a whole RADOS object may come as a list of pieces (wire.Part), not joined."""
        end = first + length
        wanted: list[tuple[str, int, int, bool]] = []   # (name, from, to, as pieces: wanted whole)
        lo = 0
        for name, n in pieces:
            hi = lo + n
            if n and hi > first and lo < end:
                a, b = max(first, lo) - lo, min(end, hi) - lo
                wanted.append((name, a, b, gather and a == 0 and b == n))
            lo = hi
        if len(wanted) <= 1:   # one RADOS object (or none: an empty range): read here, no thread
            yield from (self._read_part(*w) for w in wanted)
            return
        ahead: collections.deque[Future[Part]] = collections.deque()
        try:
            head: Part | None = self._read_part(*wanted[0])   # alone: the client (and the status line) waits for it
            for i in range(1, len(wanted)):
                while len(ahead) < STRIPES_IN_FLIGHT and i + len(ahead) < len(wanted):
                    ahead.append(self._io.submit(self._read_part, *wanted[i + len(ahead)]))
                if head is not None:
                    yield head
                    head = None
                yield ahead.popleft().result()
        finally:
            for fut in ahead:   # the client went away: what was read ahead is dropped
                fut.cancel()

    def free(self, entries: list[ObjectEntry], gc: bool = False) -> None:
        """Remove the versions' RADOS objects now, or with `gc` hand them to the garbage collector."""
        self.remove_later([(self.data_pool, name) for e in entries for name, _ in e.pieces], gc)

    @staticmethod
    def new_tag() -> str:
        return secrets.token_urlsafe(24).replace("-", "x").replace("_", "y")[:32]

    # -- object versions in the index --------------------------------------------------------

    def _index_name(self, b: Bucket, e: ObjectEntry) -> str:
        return f".dir.{b.marker}.{e.key}" + ("" if e.version_id == "null" else f"\0v{e.version_id}")

    def _key_lock(self, b: Bucket, key: str) -> threading.Lock:
        """Orders the index writes and installs of one key (concurrent PUTs of it): the index pool's
        entry and the in-memory index end on the same version, and it is the other one that is freed."""
        return self._commit_locks[hash((b.marker, key)) % len(self._commit_locks)]

    def lookup(self, b: Bucket, key: str, version_id: str | None) -> ObjectEntry:
        """The version a GET/HEAD/copy names: NoSuchKey, NoSuchVersion, or a delete marker refused as S3 does."""
        if version_id is None:
            e = b.latest(key)
            if e is None or e.delete_marker:
                err = S3Error("NoSuchKey", "the specified key does not exist", f"/{b.name}/{key}", Key=key)
                if e is not None:
                    err.headers += [("x-amz-delete-marker", "true"), ("x-amz-version-id", e.version_id)]
                raise err
            return e
        e = b.version(key, version_id)
        if e is None:
            raise S3Error("NoSuchVersion", "the specified version does not exist", f"/{b.name}/{key}", Key=key,
                          VersionId=version_id)
        if e.delete_marker:
            err = S3Error("MethodNotAllowed", "the specified method is not allowed against this resource",
                          f"/{b.name}/{key}", Method="GET", ResourceType="DeleteMarker")
            err.headers += [("x-amz-delete-marker", "true"), ("x-amz-version-id", e.version_id),
                            ("Last-Modified", s3_xml.http_date(e.mtime))]
            raise err
        return e

    def update(self, b: Bucket, e: ObjectEntry, **changes: Any) -> None:
        """Rewrite a version's index entry with `changes` (its acl, its tags), then change it in memory:
        a refused write changes nothing."""
        self.put(self.index_pool, self._index_name(b, e), json.dumps({**e.__dict__, **changes}).encode())
        with self.lock:
            for k, v in changes.items():
                setattr(e, k, v)

    def commit(self, b: Bucket, e: ObjectEntry, *, owns_data: bool = True,
               check: Callable[[ObjectEntry | None], None] | None = None) -> list[tuple[str, str]]:
        """Write the index entry of a new version, install it and free what it displaced; returns the
        x-amz-version-id header S3 sends (none for a bucket that never had versioning).

        `check` (a conditional write's, conditional_write.py) sees the key's latest version under the
        key's commit lock, before the index write: what it refuses is not written (its data freed with
        `owns_data`), and no other write of the key comes between the check and this one.

        A failed index write has an unknown outcome: the monitor may have stored the entry and failed
        after (an OSD lost mid-write, the monitor killed before it answered). So the entry is read back:
        there, the commit is complete; absent, the error is raised and, with `owns_data`, the version's
        data freed; unknown (the read fails too), the data is kept (an orphan at worst, as RGW leaves
        them) rather than freed under an entry that a restarted gateway would list."""
        if b.versioning == "Enabled":
            e.version_id = new_version_id()
        name, record = self._index_name(b, e), json.dumps(e.__dict__).encode()
        with self._key_lock(b, e.key):
            if check is not None:
                with self.lock:
                    latest = b.latest(e.key)
                try:
                    check(latest)
                except S3Error:
                    if owns_data:
                        self.free([e])
                    raise
            try:
                self.put(self.index_pool, name, record)
            except S3Error:
                landed = self._holds(self.index_pool, name, record)
                if not landed:
                    if landed is False and owns_data:
                        self.free([e])
                    raise
            with self.lock:
                displaced = b.install(e)
        self.free(displaced, gc=True)   # (RGW overwrites the head in place and sends the tails to gc)
        return [("x-amz-version-id", e.version_id)] if b.versioning else []

    def drop_version(self, b: Bucket, e: ObjectEntry) -> None:
        with self._key_lock(b, e.key):
            self.remove("remove index entry", self.index_pool, self._index_name(b, e))
            with self.lock:
                b.remove_version(e.key, e.version_id)
        self.free([e])
