"""The RGW S3 gateway as a pure model: S3 requests in, S3 responses out, every byte through RADOS.

Buckets are an index: bucket records and one index entry per object are written to the
replicated index pool (RGW keeps them as omap entries of `.dir.<marker>`; here one small RADOS
object per entry), and the gateway serves listings from its in-memory copy. An object's data is
a head RADOS object holding its first 4 MiB (`rgw_max_chunk_size`) and 4 MiB tail objects
(`rgw_obj_stripe_size`) in the EC data pool, named after RGW's `<marker>__:<tag>_<key>` and
`<marker>__shadow_.<tag>_<n>`. A fresh tag per upload makes an overwrite atomic: new tails, new
head and index entry are written first, the old RADOS objects are removed after (RGW's GC).

The operations beyond plain objects and buckets live beside it, one idea per module: `auth`
(SigV4/SigV2, header and presigned, aws-chunked bodies), `multipart`, `copy_object`,
`conditional`, `delete_multi`, `versioning`; `bucket_index` is the in-memory index they share.
Which requests are served at all is `routes`' call, made from the whole query string first: a
sub-resource the gateway does not serve answers 501 NotImplemented, never the plain operation.
Who may do what is `authz` (bucket policies from `policy`, canned and granted ACLs from `acl`): every
request is authorized in `_dispatch` before it is served, anonymous ones included.

RADOS I/O on an inactive PG blocks in real Ceph (RGW sets no `rados_osd_op_timeout`); the
gateway waits up to `op_timeout` seconds for the PG to come back, then answers 503
ServiceUnavailable — the backend is unavailable, not the client too fast (that is SlowDown).
"""

from __future__ import annotations

import base64
import bisect
import dataclasses
import json
import re
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from itertools import chain
from typing import TypeVar
from urllib.parse import parse_qsl, unquote

from services.ceph.cluster import Cluster
from services.ceph.errors import CephError
from services.ceph.rgw import (
    acl,
    auth,
    authz,
    checksums,
    conditional,
    copy_object,
    delete_multi,
    lifecycle,
    multipart,
    policy,
    rados,
    received,
    routes,
    s3_xml,
    tagging,
    versioning,
)
from services.ceph.rgw.bucket_index import Bucket, ObjectEntry, meta_name
from services.ceph.rgw.entity import check_key, check_md5, object_attrs, parse_range
from services.ceph.rgw.s3_errors import S3Error
from services.ceph.rgw.users import ANONYMOUS, User, Users
from services.ceph.rgw.wire import Request, Response

T = TypeVar("T")
HEAD_SIZE = 4 << 20  # rgw_max_chunk_size
STRIPE_SIZE = 4 << 20  # rgw_obj_stripe_size
MAX_PUT = 5 << 30  # S3's single PUT limit
_BUCKET_RE = re.compile(r"^[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9]$")


def _owner(u: User) -> s3_xml.Owner:
    return s3_xml.Owner(u.id, u.display_name)


class Gateway:
    def __init__(
        self, cluster: Cluster, users: Users, data_pool: str = "default.rgw.buckets.data",
        index_pool: str = "default.rgw.buckets.index", zone: str = "default", op_timeout: float = 30.0,
        poll: float = 0.05, clock: Callable[[], float] = time.monotonic, wall: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.cluster, self.users = cluster, users
        self.data_pool, self.index_pool, self.zone = data_pool, index_pool, zone
        self.op_timeout, self.poll = op_timeout, poll
        self.clock, self.wall, self.sleep = clock, wall, sleep
        self.lock = threading.RLock()  # the cluster model is not thread-safe: hold this to change it
        self.buckets: dict[tuple[str, str], Bucket] = {}
        self.gc: list[tuple[str, str]] = []  # (pool, name) RADOS objects left to remove
        self._next_bucket = 1
        self.instance_id = secrets.randbelow(1 << 20)
        self.multipart = multipart.Multipart(self)
        self._commit_locks = [threading.Lock() for _ in range(64)]
        self.current = threading.local()  # the request this thread serves: `.request`, `.query` (authz)

    # -- RADOS with RGW's blocking semantics -------------------------------------------------

    def _rados_guard(self) -> AbstractContextManager[object]:
        """What a RADOS call holds: the gateway lock (the in-process cluster model is not thread-safe)."""
        return self.lock

    def _rados(self, what: str, fn: Callable[[], T]) -> T:
        deadline = self.clock() + self.op_timeout
        while True:
            with self._rados_guard():
                try:
                    return fn()
                except CephError as e:
                    if e.code != "UNAVAILABLE":
                        raise S3Error("InternalError", f"{what}: {e.message}") from None
                    err = e
            if self.clock() >= deadline:
                raise S3Error("ServiceUnavailable", f"{what}: {err.message}; waited {self.op_timeout:g} s")
            self.sleep(self.poll)

    def _put(self, pool: str, name: str, data: bytes | memoryview) -> None:
        self._rados(f"write {pool}/{name}", lambda: self.cluster.put(pool, name, data))

    def _read(self, name: str) -> bytes:
        return self._rados(f"read {self.data_pool}/{name}", lambda: self.cluster.get(self.data_pool, name))

    def remove_later(self, objs: list[tuple[str, str]]) -> None:
        """RGW's garbage collector: remove now what can be, keep the rest for the next pass."""
        with self.lock:
            left = []
            for pool, name in [*self.gc, *objs]:
                try:
                    rados.remove(self.cluster, pool, name)
                except CephError:
                    left.append((pool, name))
            self.gc = left

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
        Tails are written first, head last; on failure what was written is freed and the error raised."""
        n_tails = -(-max(len(body) - HEAD_SIZE, 0) // STRIPE_SIZE)
        pieces = [(head, min(len(body), HEAD_SIZE))]
        for i in range(n_tails):
            off = HEAD_SIZE + i * STRIPE_SIZE
            pieces.append((f"{shadow}_{i + 1}", min(STRIPE_SIZE, len(body) - off)))
        written: list[tuple[str, str]] = []
        view = memoryview(body)  # stripes go to the EC codec as views: no copy of each 4 MiB
        try:
            off = HEAD_SIZE
            for name, n in pieces[1:]:
                self._put(self.data_pool, name, view[off: off + n])
                written.append((self.data_pool, name))
                off += n
            self._put(self.data_pool, head, view[:HEAD_SIZE])
        except S3Error:
            self.remove_later(written)  # nothing of a failed upload stays visible
            raise
        return pieces

    def read_data(self, pieces: list[tuple[str, int]], first: int, length: int) -> bytes:
        parts = self.read_parts(pieces, first, length)
        if len(parts) == 1 and isinstance(parts[0], bytes):
            return parts[0]
        return b"".join(parts)  # one copy of the range, whatever the number of stripes

    def read_parts(self, pieces: list[tuple[str, int]], first: int, length: int) -> list[bytes | memoryview]:
        """Bytes `first`..`first + length` of an object as the RADOS objects hold them, in order."""
        return list(self.iter_parts(pieces, first, length))

    def iter_parts(self, pieces: list[tuple[str, int]], first: int, length: int) -> Iterator[bytes | memoryview]:
        """`read_parts`, each RADOS object read only when the one before it has been taken."""
        end = first + length
        lo = 0
        for name, n in pieces:
            hi = lo + n
            if n and hi > first and lo < end:
                data = self._read(name)
                a, b = max(first, lo) - lo, min(end, hi) - lo
                yield data if a == 0 and b == len(data) else memoryview(data)[a:b]
            lo = hi

    def free(self, entries: list[ObjectEntry]) -> None:
        self.remove_later([(self.data_pool, name) for e in entries for name, _ in e.pieces])

    @staticmethod
    def new_tag() -> str:
        return secrets.token_urlsafe(24).replace("-", "x").replace("_", "y")[:32]

    def _index_name(self, b: Bucket, e: ObjectEntry) -> str:
        return f".dir.{b.marker}.{e.key}" + ("" if e.version_id == "null" else f"\0v{e.version_id}")

    def _key_lock(self, b: Bucket, key: str) -> threading.Lock:
        """Orders the index writes and installs of one key (concurrent PUTs of it): the index pool's
        entry and the in-memory index end on the same version, and it is the other one that is freed."""
        return self._commit_locks[hash((b.marker, key)) % len(self._commit_locks)]

    def commit(self, b: Bucket, e: ObjectEntry, *, owns_data: bool = True) -> list[tuple[str, str]]:
        """Write the index entry of a new version, install it and free what it displaced; returns the
        x-amz-version-id header S3 sends (none for a bucket that never had versioning).

        A failed index write has an unknown outcome: the monitor may have stored the entry and failed
        after (an OSD lost mid-write, the monitor killed before it answered). So the entry is read back:
        there, the commit is complete; absent, the error is raised and, with `owns_data`, the version's
        data freed; unknown (the read fails too), the data is kept (an orphan at worst, as RGW leaves
        them) rather than freed under an entry that a restarted gateway would list."""
        if b.versioning == "Enabled":
            e.version_id = versioning.new_version_id()
        name, record = self._index_name(b, e), json.dumps(e.__dict__).encode()
        with self._key_lock(b, e.key):
            try:
                self._put(self.index_pool, name, record)
            except S3Error:
                landed = self._holds(self.index_pool, name, record)
                if not landed:
                    if landed is False and owns_data:
                        self.free([e])
                    raise
            with self.lock:
                displaced = b.install(e)
        self.free(displaced)
        return [("x-amz-version-id", e.version_id)] if b.versioning else []

    def _holds(self, pool: str, name: str, data: bytes) -> bool | None:
        """Whether RADOS object `name` holds `data` now (one try: None when that cannot be known)."""
        try:
            with self._rados_guard():
                return bytes(self.cluster.get(pool, name)) == data
        except CephError as e:
            return False if e.code == "NOT_FOUND" else None

    def drop_version(self, b: Bucket, e: ObjectEntry) -> None:
        with self._key_lock(b, e.key):
            self._rados("remove index entry",
                        lambda: rados.remove(self.cluster, self.index_pool, self._index_name(b, e)))
            with self.lock:
                b.remove_version(e.key, e.version_id)
        self.free([e])

    # -- entry point -------------------------------------------------------------------------

    def handle(self, req: Request) -> Response:
        rid = f"tx{secrets.token_hex(10)}-{int(self.wall()):x}-{self.instance_id:x}-{self.zone}"
        path = unquote(req.raw_path)
        try:
            who = auth.authenticate(req.method, req.raw_path, req.raw_query, req.headers, req.body, self.users,
                                    datetime.fromtimestamp(self.wall(), UTC))
            user = self.users.by_key(who.access_key) if who.access_key else ANONYMOUS
            assert user is not None
            req = dataclasses.replace(req, body=who.body, checksums=who.checksums)
            resp = self._dispatch(req, user, path)
            if req.method in ("PUT", "POST") and resp.status == 200:
                resp.headers += [(k, v) for k, v in who.checksums.items()]
        except conditional.NotModified as nm:
            resp = Response(304, list(getattr(nm, "headers", [])))
        except Exception as exc:  # noqa: BLE001 - every failure is an S3 error to the client
            e = exc if isinstance(exc, S3Error) else S3Error("InternalError", f"{type(exc).__name__}: {exc}")
            e.resource = e.resource or path
            size = e.extra.pop("size", None)
            body = e.xml(rid)
            resp = Response(e.status, [("Content-Type", "application/xml"), *e.headers],
                            b"" if req.method == "HEAD" else body, len(body))
            if size is not None:
                resp.headers.append(("Content-Range", f"bytes */{size}"))
        resp.headers += [("x-amz-request-id", rid), ("Date", s3_xml.http_date(self.wall()))]
        return resp

    def _dispatch(self, req: Request, user: User, path: str) -> Response:
        query = dict(parse_qsl(req.raw_query, keep_blank_values=True))
        self.current.request, self.current.query = req, query
        name, _, key = path.lstrip("/").partition("/")
        m = req.method
        routes.route(m, name, key, query)  # a request the gateway does not serve is refused here, unchanged
        if not name:
            authz.authorize(self, user, "s3:ListAllMyBuckets", "")
            return self.list_buckets(user)
        if not (m == "POST" and "delete" in query and not key):  # DeleteObjects: each key on its own
            authz.authorize(self, user, policy.action(m, name, key, query), name, key or None, query.get("versionId"))
        if not key:
            return self._bucket_op(req, user, name, query)
        if "acl" in query:
            return authz.object_acl(self, req, self.bucket(user, name), key, query.get("versionId"))
        if "tagging" in query:
            return tagging.object_tagging(self, req, self.bucket(user, name), key, query.get("versionId"))
        if "uploadId" in query or "uploads" in query:
            return self.multipart.dispatch(req, user, name, key, query)
        vid = query.get("versionId")
        if vid == "":
            raise S3Error("InvalidArgument", "version id must not be empty", ArgumentName="versionId")
        if m == "PUT":
            if "x-amz-copy-source" in req.headers:
                return copy_object.copy_object(self, user, name, key, req.headers)
            return self.put_object(user, name, key, req.headers, req.body, req.checksums)
        if m in ("GET", "HEAD"):
            return self.get_object(user, name, key, req.headers, head=m == "HEAD", version_id=vid,
                                   part_number=query.get("partNumber"))
        if m == "DELETE":
            return self.delete_object(user, name, key, vid)
        raise S3Error("MethodNotAllowed", f"{m} is not allowed on an object")

    def _bucket_op(self, req: Request, user: User, name: str, query: dict[str, str]) -> Response:
        m = req.method
        if "policy" in query:
            return authz.bucket_policy(self, req, self.bucket(user, name))
        if "acl" in query:
            return authz.bucket_acl(self, req, self.bucket(user, name))
        if "tagging" in query:
            return tagging.bucket_tagging(self, req, self.bucket(user, name))
        if "lifecycle" in query:
            return lifecycle.bucket_lifecycle(self, req, self.bucket(user, name))
        if "versioning" in query:
            b = self.bucket(user, name)
            if m == "PUT":
                status = versioning.parse_config(req.body)
                self._put(self.index_pool, meta_name(b.tenant, name, "versioning"), status.encode())
                with self.lock:
                    b.versioning = status
                return Response(200)
            if m == "GET":
                return Response(200, [("Content-Type", "application/xml")], versioning.config_xml(b.versioning))
        elif "versions" in query and m == "GET":
            return versioning.list_versions(self, self.bucket(user, name), query)
        elif "uploads" in query and m == "GET":
            return self.multipart.list_uploads(self.bucket(user, name), query)
        elif "delete" in query and m == "POST":
            return delete_multi.delete_objects(self, user, name, req.headers, req.body)
        elif m == "PUT":
            return self.create_bucket(user, name, req.headers)
        elif m == "HEAD":
            self.bucket(user, name)
            return Response(200)
        elif m == "DELETE":
            return self.delete_bucket(user, name)
        elif m == "GET":
            return self.list_objects(user, name, query)
        raise S3Error("MethodNotAllowed", f"{m} is not allowed on a bucket")

    # -- buckets -----------------------------------------------------------------------------

    def bucket(self, user: User, name: str) -> Bucket:
        """The bucket a request names, or NoSuchBucket; whether `user` may use it is `authz.authorize`'s call."""
        tenant, _, bare = name.rpartition(":")  # RGW lets `tenant:bucket` name another tenant's bucket
        b = self.buckets.get((tenant if ":" in name else user.tenant, bare))
        if b is None:
            raise S3Error("NoSuchBucket", "the specified bucket does not exist", f"/{name}", BucketName=name)
        return b

    def list_buckets(self, user: User) -> Response:
        mine = sorted((b for b in self.buckets.values() if b.owner.id == user.id), key=lambda b: b.name)
        body = s3_xml.list_buckets(_owner(user), [s3_xml.BucketItem(b.name, b.created) for b in mine])
        return Response(200, [("Content-Type", "application/xml")], body)

    def create_bucket(self, user: User, name: str, headers: dict[str, str] | None = None) -> Response:
        if not _BUCKET_RE.match(name) or ".." in name:
            raise S3Error("InvalidBucketName", f"{name!r} is not a valid bucket name", f"/{name}", BucketName=name)
        grants = acl.from_headers(headers or {}, for_object=False) or []
        existing = self.buckets.get((user.tenant, name))
        if existing is not None:
            code = "BucketAlreadyOwnedByYou" if existing.owner.id == user.id else "BucketAlreadyExists"
            raise S3Error(code, f"bucket {name} already exists", f"/{name}", BucketName=name)
        marker = f"{self.zone}.{self.instance_id}.{self._next_bucket}"
        self._next_bucket += 1
        b = Bucket(name, user.tenant, user, self.wall(), marker)
        record = json.dumps({"name": name, "tenant": user.tenant, "owner": user.id, "marker": marker,
                             "created": b.created}).encode()
        self._put(self.index_pool, meta_name(user.tenant, name), record)
        if grants:
            self._put(self.index_pool, meta_name(user.tenant, name, "acl"), json.dumps(grants).encode())
            b.acl = grants
        with self.lock:
            self.buckets[(user.tenant, name)] = b
        return Response(200, [("Location", f"/{name}")])

    def delete_bucket(self, user: User, name: str) -> Response:
        b = self.bucket(user, name)
        if b.versions:
            raise S3Error("BucketNotEmpty", "the bucket you tried to delete is not empty", f"/{name}", BucketName=name)
        self._rados("remove bucket record",
                    lambda: rados.remove(self.cluster, self.index_pool, meta_name(b.tenant, name)))
        with self.lock:
            self.buckets.pop((b.tenant, b.name), None)
        authz.drop_bucket_meta(self, b)
        return Response(204)

    def list_objects(self, user: User, name: str, q: dict[str, str]) -> Response:
        b = self.bucket(user, name)
        prefix, delimiter = q.get("prefix", ""), q.get("delimiter", "")
        url = q.get("encoding-type", "") == "url"
        try:
            max_keys = min(int(q.get("max-keys", "1000")), 1000)
        except ValueError:
            raise S3Error("InvalidArgument", "max-keys must be an integer") from None
        if max_keys < 0:
            raise S3Error("InvalidArgument", "max-keys must not be negative")
        v2 = q.get("list-type") == "2"
        token = q.get("continuation-token", "")
        if v2 and token:
            try:
                after = base64.urlsafe_b64decode(token.encode()).decode()
            except ValueError:
                raise S3Error("InvalidArgument", "the continuation token is not valid") from None
        else:
            after = q.get("start-after", "") if v2 else q.get("marker", "")
        listing = self._listing(b, prefix, delimiter, after, max_keys)
        if v2:
            nxt = base64.urlsafe_b64encode(listing.last.encode()).decode() if listing.truncated else ""
            body = s3_xml.list_objects_v2(name, prefix, delimiter, max_keys, url, listing, token, nxt,
                                          q.get("start-after", ""))
        else:
            body = s3_xml.list_objects_v1(name, prefix, delimiter, max_keys, url, listing, q.get("marker", ""))
        return Response(200, [("Content-Type", "application/xml")], body)

    def _listing(self, b: Bucket, prefix: str, delimiter: str, after: str, max_keys: int) -> s3_xml.Listing:
        with self.lock:
            start = bisect.bisect_right(b.keys, after) if after >= prefix else bisect.bisect_left(b.keys, prefix)
            keys = b.keys[start:]
            contents: list[s3_xml.ObjectItem] = []
            prefixes: list[str] = []
            last, truncated = "", False
            for k in keys:
                if not k.startswith(prefix):
                    break
                if k <= after or (delimiter and after.endswith(delimiter) and k.startswith(after)):
                    continue  # still inside the common prefix the last page ended on
                cp = ""
                if delimiter:
                    i = k.find(delimiter, len(prefix))
                    if i >= 0:
                        cp = k[: i + len(delimiter)]
                        if prefixes and prefixes[-1] == cp:
                            continue
                if len(contents) + len(prefixes) >= max_keys:
                    truncated = True
                    break
                if cp:
                    prefixes.append(cp)
                else:
                    e = b.objects[k]
                    contents.append(s3_xml.ObjectItem(k, e.mtime, f'"{e.etag}"', e.size, _owner(b.owner)))
                last = cp or k
            return s3_xml.Listing(contents, prefixes, truncated, last)

    # -- objects -----------------------------------------------------------------------------

    def put_object(self, user: User, name: str, key: str, headers: dict[str, str], body: bytes,
                   checksums: dict[str, str] | None = None) -> Response:
        b = self.bucket(user, name)
        check_key(key)
        if len(body) > MAX_PUT:
            raise S3Error("EntityTooLarge", "a single PUT is limited to 5 GiB; use a multipart upload")
        attrs = object_attrs(headers)
        grants = acl.from_headers(headers, b.owner.id) or []
        tags = tagging.from_header(headers.get("x-amz-tagging", ""))
        tag = self.new_tag()
        etag, pieces = self.write_data_md5(f"{b.marker}__:{tag}_{key}", f"{b.marker}__shadow_.{tag}", body, headers)
        entry = ObjectEntry(key, len(body), etag, self.wall(), user.id, pieces, attrs, acl=grants,
                            checksums=dict(checksums or {}), tags=tags)
        vh = self.commit(b, entry)  # on failure it frees the data unless the entry may have landed
        return Response(200, [("ETag", f'"{entry.etag}"'), *vh])

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

    def get_object(self, user: User, name: str, key: str, headers: dict[str, str], head: bool,
                   version_id: str | None = None, part_number: str | None = None) -> Response:
        """GET/HEAD of an object version, whole, a `Range`, or one part of a multipart upload
        (`partNumber`: the bytes that part had; an object not uploaded in parts is one part)."""
        if part_number is not None and "range" in headers:
            raise S3Error("InvalidRequest", "Cannot specify both Range header and partNumber query parameter")
        b = self.bucket(user, name)
        e = self.lookup(b, key, version_id)
        hdrs = [("ETag", f'"{e.etag}"'), ("Last-Modified", s3_xml.http_date(e.mtime)), ("Accept-Ranges", "bytes")]
        if b.versioning:
            hdrs.append(("x-amz-version-id", e.version_id))
        try:
            conditional.check(headers, e.etag, e.mtime)
        except conditional.NotModified:
            raise _NotModified(hdrs) from None
        hdrs += [(k, v) for k, v in e.attrs.items()] + tagging.count_header(e.tags)
        first, last = 0, e.size - 1
        status = 200
        r = parse_range(headers.get("range", ""), e.size) if part_number is None else _part_range(e, part_number)
        if part_number is not None and e.parts:
            hdrs.append(("x-amz-mp-parts-count", str(len(e.parts))))
        if r is not None:
            first, last = r
            status = 206
            hdrs.append(("Content-Range", f"bytes {first}-{last}/{e.size}"))
        length = max(last - first + 1, 0)
        if r is None and headers.get("x-amz-checksum-mode", "").upper() == "ENABLED":
            hdrs += list(e.checksums.items())  # as stored at upload (RGW's x-amz-content-checksum attr)
        if head:
            return Response(status, hdrs, b"", length)
        # Streamed as RGW does: the first stripe is read before the status is sent (so that a failure
        # there is an S3 error), each next one while the one before it goes out. A stripe that fails
        # later ends the connection short of Content-Length, which clients report as an error.
        parts = self.iter_parts(e.pieces, first, length)
        head_part = next(parts, None)
        if head_part is None or len(head_part) == length:  # all in one RADOS object (a small object)
            return Response(status, hdrs, length=length, parts=[] if head_part is None else [head_part])
        return Response(status, hdrs, length=length, parts=chain([head_part], parts))

    def delete_object(self, user: User, name: str, key: str, version_id: str | None = None) -> Response:
        """S3 DELETE: a named version is removed for good; otherwise an unversioned bucket drops the
        object, a versioned one gains a delete marker (the "null" one when versioning is suspended)."""
        b = self.bucket(user, name)
        hdrs = []
        if version_id is not None:
            e = b.version(key, version_id)
            if e is None:
                if not versioning.valid_id(version_id):
                    raise S3Error("InvalidArgument", "invalid version id specified", ArgumentName="versionId",
                                  ArgumentValue=version_id)
                return Response(204, [("x-amz-version-id", version_id)])
            self.drop_version(b, e)
            hdrs.append(("x-amz-version-id", e.version_id))
            if e.delete_marker:
                hdrs.append(("x-amz-delete-marker", "true"))
        elif not b.versioning:
            e = b.latest(key)
            if e is not None:
                self.drop_version(b, e)
        else:
            dm = ObjectEntry(key, 0, "", self.wall(), user.id, [], {}, delete_marker=True)
            hdrs = self.commit(b, dm) + [("x-amz-delete-marker", "true")]
        return Response(204, hdrs)


def _part_range(e: ObjectEntry, part_number: str) -> tuple[int, int] | None:
    if not part_number.isdigit() or not 1 <= int(part_number) <= multipart.MAX_PARTS:
        raise S3Error("InvalidArgument", "Part number must be an integer between 1 and 10000, inclusive",
                      ArgumentName="partNumber", ArgumentValue=part_number)
    sizes, n = e.parts or [e.size], int(part_number)
    if n > len(sizes):  # RGW's answer (S3 says InvalidPartNumber, 416)
        raise S3Error("InvalidPart", "the requested part number is not satisfiable", PartNumber=part_number)
    first = sum(sizes[: n - 1])
    return (first, first + sizes[n - 1] - 1) if sizes[n - 1] else None


class _NotModified(conditional.NotModified):
    def __init__(self, headers: list[tuple[str, str]]) -> None:
        super().__init__()
        self.headers = headers
