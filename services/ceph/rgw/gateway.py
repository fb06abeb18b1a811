"""The RGW S3 gateway as a pure model: S3 requests in, S3 responses out, every byte through RADOS.

Buckets are an index: bucket records and one index entry per object are written to the
replicated index pool (RGW keeps them as omap entries of `.dir.<marker>`; here one small RADOS
object per entry), and the gateway serves listings from its in-memory copy. An object's data is
a head RADOS object holding its first 4 MiB (`rgw_max_chunk_size`) and 4 MiB tail objects
(`rgw_obj_stripe_size`) in the EC data pool, named after RGW's `<marker>__:<tag>_<key>` and
`<marker>__shadow_.<tag>_<n>`. A fresh tag per upload makes an overwrite atomic: new tails, new
head and index entry are written first, the old RADOS objects are removed after (RGW's GC).

RADOS I/O on an inactive PG blocks in real Ceph (RGW sets no `rados_osd_op_timeout`); the
gateway waits up to `op_timeout` seconds for the PG to come back, then answers 503
ServiceUnavailable — the backend is unavailable, not the client too fast (that is SlowDown).
"""

from __future__ import annotations

import base64
import bisect
import hashlib
import json
import re
import secrets
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TypeVar
from urllib.parse import parse_qsl, unquote

from services.ceph.cluster import Cluster
from services.ceph.errors import CephError
from services.ceph.rgw import rados, s3_xml, sigv4
from services.ceph.rgw.s3_errors import S3Error
from services.ceph.rgw.users import User, Users

T = TypeVar("T")
HEAD_SIZE = 4 << 20  # rgw_max_chunk_size
STRIPE_SIZE = 4 << 20  # rgw_obj_stripe_size
MAX_PUT = 5 << 30  # S3's single PUT limit
_BUCKET_RE = re.compile(r"^[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9]$")
_KEPT_HEADERS = ("content-type", "content-encoding", "content-disposition", "content-language", "cache-control",
                 "expires")
_RANGE_RE = re.compile(r"^bytes=(\d*)-(\d*)$")


@dataclass
class Request:
    method: str
    raw_path: str  # as on the request line, still percent-encoded, without the query
    raw_query: str
    headers: dict[str, str]  # lower-case names
    body: bytes = b""
    remote: str = ""


@dataclass
class Response:
    status: int
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""
    length: int | None = None  # Content-Length when it is not len(body) (HEAD)


@dataclass
class ObjectEntry:
    key: str
    size: int
    etag: str  # hex MD5, unquoted
    mtime: float
    owner: str
    head: str
    tails: list[str]
    attrs: dict[str, str]  # kept standard headers and x-amz-meta-*


@dataclass
class Bucket:
    name: str
    tenant: str
    owner: User
    created: float
    marker: str
    objects: dict[str, ObjectEntry] = field(default_factory=dict)
    keys: list[str] = field(default_factory=list)  # sorted

    def put_entry(self, e: ObjectEntry) -> ObjectEntry | None:
        old = self.objects.get(e.key)
        if old is None:
            bisect.insort(self.keys, e.key)
        self.objects[e.key] = e
        return old

    def drop_entry(self, key: str) -> ObjectEntry | None:
        old = self.objects.pop(key, None)
        if old is not None:
            del self.keys[bisect.bisect_left(self.keys, key)]
        return old


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

    # -- RADOS with RGW's blocking semantics -------------------------------------------------

    def _rados(self, what: str, fn: Callable[[], T]) -> T:
        deadline = self.clock() + self.op_timeout
        while True:
            with self.lock:
                try:
                    return fn()
                except CephError as e:
                    if e.code != "UNAVAILABLE":
                        raise S3Error("InternalError", f"{what}: {e.message}") from None
                    err = e
            if self.clock() >= deadline:
                raise S3Error("ServiceUnavailable", f"{what}: {err.message}; waited {self.op_timeout:g} s")
            self.sleep(self.poll)

    def _put(self, pool: str, name: str, data: bytes) -> None:
        self._rados(f"write {pool}/{name}", lambda: self.cluster.put(pool, name, data))

    def _read(self, name: str) -> bytes:
        return self._rados(f"read {self.data_pool}/{name}", lambda: self.cluster.get(self.data_pool, name))

    def _remove_later(self, objs: list[tuple[str, str]]) -> None:
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
        return [e.head, *e.tails]

    # -- entry point -------------------------------------------------------------------------

    def handle(self, req: Request) -> Response:
        rid = f"tx{secrets.token_hex(10)}-{int(self.wall()):x}-{self.instance_id:x}-{self.zone}"
        path = unquote(req.raw_path)
        try:
            access_key = sigv4.verify(req.method, req.raw_path, req.raw_query, req.headers, self.users.secret_of,
                                      datetime.fromtimestamp(self.wall(), UTC))
            user = self.users.by_key(access_key)
            assert user is not None
            if req.method in ("PUT", "POST"):
                sigv4.check_payload(req.headers, req.body)
            resp = self._dispatch(req, user, path)
        except Exception as exc:  # noqa: BLE001 - every failure is an S3 error to the client
            e = exc if isinstance(exc, S3Error) else S3Error("InternalError", f"{type(exc).__name__}: {exc}")
            e.resource = e.resource or path
            size = e.extra.pop("size", None)
            body = e.xml(rid)
            resp = Response(e.status, [("Content-Type", "application/xml")],
                            b"" if req.method == "HEAD" else body, len(body))
            if size is not None:
                resp.headers.append(("Content-Range", f"bytes */{size}"))
        resp.headers += [("x-amz-request-id", rid), ("Date", s3_xml.http_date(self.wall()))]
        return resp

    def _dispatch(self, req: Request, user: User, path: str) -> Response:
        query = dict(parse_qsl(req.raw_query, keep_blank_values=True))
        name, _, key = path.lstrip("/").partition("/")
        m = req.method
        if not name:
            if m == "GET":
                return self.list_buckets(user)
            raise S3Error("MethodNotAllowed", f"{m} is not allowed on the service")
        unsupported = set(query) & {"uploads", "uploadId", "versioning", "versions", "acl", "policy", "tagging",
                                    "delete", "lifecycle", "cors", "website", "location", "restore", "select"}
        if unsupported:
            raise S3Error("NotImplemented", f"?{sorted(unsupported)[0]} is not implemented by this gateway")
        if not key:
            if m == "PUT":
                return self.create_bucket(user, name)
            if m == "HEAD":
                self._bucket(user, name)
                return Response(200)
            if m == "DELETE":
                return self.delete_bucket(user, name)
            if m == "GET":
                return self.list_objects(user, name, query)
            raise S3Error("MethodNotAllowed", f"{m} is not allowed on a bucket")
        if m == "PUT":
            if "x-amz-copy-source" in req.headers:
                raise S3Error("NotImplemented", "CopyObject is not implemented by this gateway")
            return self.put_object(user, name, key, req.headers, req.body)
        if m in ("GET", "HEAD"):
            return self.get_object(user, name, key, req.headers.get("range", ""), head=m == "HEAD")
        if m == "DELETE":
            return self.delete_object(user, name, key)
        raise S3Error("MethodNotAllowed", f"{m} is not allowed on an object")

    # -- buckets -----------------------------------------------------------------------------

    def _bucket(self, user: User, name: str) -> Bucket:
        tenant, _, bare = name.rpartition(":")  # RGW lets `tenant:bucket` name another tenant's bucket
        b = self.buckets.get((tenant if ":" in name else user.tenant, bare))
        if b is None:
            raise S3Error("NoSuchBucket", "the specified bucket does not exist", f"/{name}", BucketName=name)
        if b.owner.id != user.id:
            raise S3Error("AccessDenied", f"bucket {name} belongs to {b.owner.id}", f"/{name}")
        return b

    def list_buckets(self, user: User) -> Response:
        mine = sorted((b for b in self.buckets.values() if b.owner.id == user.id), key=lambda b: b.name)
        body = s3_xml.list_buckets(_owner(user), [s3_xml.BucketItem(b.name, b.created) for b in mine])
        return Response(200, [("Content-Type", "application/xml")], body)

    def create_bucket(self, user: User, name: str) -> Response:
        if not _BUCKET_RE.match(name) or ".." in name:
            raise S3Error("InvalidBucketName", f"{name!r} is not a valid bucket name", f"/{name}", BucketName=name)
        existing = self.buckets.get((user.tenant, name))
        if existing is not None:
            code = "BucketAlreadyOwnedByYou" if existing.owner.id == user.id else "BucketAlreadyExists"
            raise S3Error(code, f"bucket {name} already exists", f"/{name}", BucketName=name)
        marker = f"{self.zone}.{self.instance_id}.{self._next_bucket}"
        self._next_bucket += 1
        b = Bucket(name, user.tenant, user, self.wall(), marker)
        record = json.dumps({"name": name, "tenant": user.tenant, "owner": user.id, "marker": marker,
                             "created": b.created}).encode()
        self._put(self.index_pool, f".bucket.meta.{user.tenant}:{name}", record)
        with self.lock:
            self.buckets[(user.tenant, name)] = b
        return Response(200, [("Location", f"/{name}")])

    def delete_bucket(self, user: User, name: str) -> Response:
        b = self._bucket(user, name)
        if b.objects:
            raise S3Error("BucketNotEmpty", "the bucket you tried to delete is not empty", f"/{name}", BucketName=name)
        self._rados("remove bucket record",
                    lambda: rados.remove(self.cluster, self.index_pool, f".bucket.meta.{b.tenant}:{name}"))
        with self.lock:
            self.buckets.pop((b.tenant, b.name), None)
        return Response(204)

    def list_objects(self, user: User, name: str, q: dict[str, str]) -> Response:
        b = self._bucket(user, name)
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

    def put_object(self, user: User, name: str, key: str, headers: dict[str, str], body: bytes) -> Response:
        b = self._bucket(user, name)
        if len(key.encode()) > 1024:
            raise S3Error("KeyTooLongError", "your key is too long: at most 1024 bytes")
        if len(body) > MAX_PUT:
            raise S3Error("EntityTooLarge", "a single PUT is limited to 5 GiB; use a multipart upload")
        md5 = hashlib.md5(body)
        _check_digests(headers, body, md5.digest())
        tag = secrets.token_urlsafe(24).replace("-", "x").replace("_", "y")[:32]
        head = f"{b.marker}__:{tag}_{key}"
        n_tails = -(-max(len(body) - HEAD_SIZE, 0) // STRIPE_SIZE)
        tails = [f"{b.marker}__shadow_.{tag}_{i}" for i in range(1, n_tails + 1)]
        attrs = {h: headers[h] for h in _KEPT_HEADERS if h in headers}
        attrs.setdefault("content-type", "binary/octet-stream")
        attrs.update({h: v for h, v in headers.items() if h.startswith("x-amz-meta-")})
        entry = ObjectEntry(key, len(body), md5.hexdigest(), self.wall(), user.id, head, tails, attrs)
        written: list[tuple[str, str]] = []
        try:
            for i, tail in enumerate(tails):
                off = HEAD_SIZE + i * STRIPE_SIZE
                self._put(self.data_pool, tail, body[off: off + STRIPE_SIZE])
                written.append((self.data_pool, tail))
            self._put(self.data_pool, head, body[:HEAD_SIZE])
            written.append((self.data_pool, head))
            self._put(self.index_pool, f".dir.{b.marker}.{key}", json.dumps(entry.__dict__).encode())
        except S3Error:
            self._remove_later(written)  # nothing of a failed upload stays visible
            raise
        with self.lock:
            old = b.put_entry(entry)
        if old is not None:
            self._remove_later([(self.data_pool, o) for o in (old.head, *old.tails)])
        return Response(200, [("ETag", f'"{entry.etag}"')])

    def get_object(self, user: User, name: str, key: str, range_header: str, head: bool) -> Response:
        b = self._bucket(user, name)
        e = b.objects.get(key)
        if e is None:
            raise S3Error("NoSuchKey", "the specified key does not exist", f"/{name}/{key}", Key=key)
        first, last = 0, e.size - 1
        status = 200
        hdrs = [("ETag", f'"{e.etag}"'), ("Last-Modified", s3_xml.http_date(e.mtime)), ("Accept-Ranges", "bytes")]
        hdrs += [(k, v) for k, v in e.attrs.items()]
        r = _parse_range(range_header, e.size)
        if r is not None:
            first, last = r
            status = 206
            hdrs.append(("Content-Range", f"bytes {first}-{last}/{e.size}"))
        length = max(last - first + 1, 0)
        if head:
            return Response(status, hdrs, b"", length)
        return Response(status, hdrs, self._read_range(e, first, length))

    def _read_range(self, e: ObjectEntry, first: int, length: int) -> bytes:
        out = bytearray()
        end = first + length
        pieces = [(e.head, 0, min(e.size, HEAD_SIZE))]
        pieces += [(t, HEAD_SIZE + i * STRIPE_SIZE, min(e.size, HEAD_SIZE + (i + 1) * STRIPE_SIZE))
                   for i, t in enumerate(e.tails)]
        for rname, lo, hi in pieces:
            if hi <= first or lo >= end:
                continue
            data = self._read(rname)
            out += data[max(first, lo) - lo: min(end, hi) - lo]
        return bytes(out)

    def delete_object(self, user: User, name: str, key: str) -> Response:
        b = self._bucket(user, name)
        e = b.objects.get(key)
        if e is not None:
            self._rados("remove index entry",
                        lambda: rados.remove(self.cluster, self.index_pool, f".dir.{b.marker}.{key}"))
            with self.lock:
                b.drop_entry(key)
            self._remove_later([(self.data_pool, o) for o in (e.head, *e.tails)])
        return Response(204)


def _check_digests(headers: dict[str, str], body: bytes, md5: bytes) -> None:
    sent = headers.get("content-md5")
    if sent is not None:
        try:
            want = base64.b64decode(sent, validate=True)
        except ValueError:
            raise S3Error("InvalidDigest", "the Content-MD5 you specified is not valid") from None
        if want != md5:
            raise S3Error("BadDigest", "the Content-MD5 you specified did not match what we received")
    checks = {"x-amz-checksum-crc32": lambda: zlib.crc32(body).to_bytes(4, "big"),
              "x-amz-checksum-sha256": lambda: hashlib.sha256(body).digest(),
              "x-amz-checksum-sha1": lambda: hashlib.sha1(body).digest()}
    for h, calc in checks.items():
        if h in headers and base64.b64encode(calc()).decode() != headers[h]:
            raise S3Error("BadDigest", f"the {h} you specified did not match the calculated checksum")


def _parse_range(header: str, size: int) -> tuple[int, int] | None:
    """`bytes=a-b`, `bytes=a-` or `bytes=-n` → (first, last); None to send the whole object."""
    m = _RANGE_RE.match(header.strip()) if header else None
    if m is None or (not m[1] and not m[2]):
        return None  # absent, multi-range or malformed: S3 ignores it
    if not m[1]:
        n = int(m[2])
        if n == 0:
            raise S3Error("InvalidRange", "the requested range is not satisfiable", size=str(size))
        return max(size - n, 0), size - 1
    first = int(m[1])
    last = min(int(m[2]), size - 1) if m[2] else size - 1
    if first >= size or (m[2] and int(m[2]) < first):
        if m[2] and int(m[2]) < first:
            return None
        raise S3Error("InvalidRange", "the requested range is not satisfiable", size=str(size))
    return first, last
