"""The RGW S3 gateway as a pure model: S3 requests in, S3 responses out, every byte through RADOS.

Three layers, each importing only the ones below it:
- `store` holds the bucket index and does every RADOS read and write (head and tail stripes in the
  EC data pool, index entries and bucket attributes in the index pool), with RGW's blocking semantics.
- the operations take a `Store`: `buckets`, `objects`, `object_attributes`, `multipart`, `copy_object`,
  `delete_multi`, `versioning`, `tagging`, `lifecycle`, `object_lock`, and `authz` (who may do what:
  bucket policies from `policy`, canned and granted ACLs from `acl`).
- this module authenticates a request (`auth`: SigV4/SigV2, header and presigned, aws-chunked bodies),
  asks `routes` whether it is served at all (from the whole query string: a sub-resource the gateway
  does not serve answers 501 NotImplemented, never the plain operation), authorizes it, hands it to
  its operation, and turns any failure into the S3 error response (`S3Error.response`: the one place).
The HTTP front (http.py) and the daemon (daemon.py) are the only modules that import this one.
"""

from __future__ import annotations

import dataclasses
import secrets
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from urllib.parse import parse_qsl, unquote

from services.ceph.cluster import Cluster
from services.ceph.rgw import (
    auth,
    authz,
    buckets,
    conditional,
    copy_object,
    cors,
    delete_multi,
    encryption,
    lifecycle,
    multipart,
    object_attributes,
    object_lock,
    objects,
    ownership,
    policy,
    public_access,
    routes,
    s3_xml,
    tagging,
    versioning,
)
from services.ceph.rgw.bucket_index import Bucket
from services.ceph.rgw.s3_errors import S3Error
from services.ceph.rgw.store import Store
from services.ceph.rgw.users import ANONYMOUS, User, Users
from services.ceph.rgw.wire import Request, Response


class Gateway:
    """`rados_lock=False` for a thread-safe cluster (the daemon's, over the monitor): see `Store`."""

    def __init__(
        self, cluster: Cluster, users: Users, data_pool: str = "default.rgw.buckets.data",
        index_pool: str = "default.rgw.buckets.index", zone: str = "default", op_timeout: float = 30.0,
        poll: float = 0.05, clock: Callable[[], float] = time.monotonic, wall: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep, rados_lock: bool = True,
    ) -> None:
        self.store = Store(cluster, users, data_pool, index_pool, zone, op_timeout, poll, clock, wall, sleep,
                           rados_lock)
        self.multipart = multipart.Multipart(self.store)

    # what tests and the daemon read of the store, under the gateway's name
    @property
    def users(self) -> Users:
        return self.store.users

    @property
    def cluster(self) -> Cluster:
        return self.store.cluster

    @property
    def lock(self) -> threading.RLock:
        return self.store.lock

    @property
    def buckets(self) -> dict[tuple[str, str], Bucket]:
        return self.store.buckets

    @property
    def wall(self) -> Callable[[], float]:
        return self.store.wall

    @wall.setter
    def wall(self, wall: Callable[[], float]) -> None:
        self.store.wall = wall

    def rados_objects(self, bucket: str, key: str, tenant: str = "") -> list[str]:
        return self.store.rados_objects(bucket, key, tenant)

    # -- entry point -------------------------------------------------------------------------

    def handle(self, req: Request) -> Response:
        rid = f"tx{secrets.token_hex(10)}-{int(self.wall()):x}-{self.store.instance_id:x}-{self.store.zone}"
        path = unquote(req.raw_path)
        user = ANONYMOUS
        try:
            if req.method == "OPTIONS":  # the CORS preflight: never signed, so never authenticated
                resp = self._preflight(req, path, rid)
                resp.headers += [("x-amz-request-id", rid), ("Date", s3_xml.http_date(self.wall()))]
                return resp
            who = auth.authenticate(req.method, req.raw_path, req.raw_query, req.headers, req.body, self.users,
                                    datetime.fromtimestamp(self.wall(), UTC))
            found = self.users.by_key(who.access_key) if who.access_key else ANONYMOUS
            assert found is not None
            user = found
            req = dataclasses.replace(req, body=who.body, checksums=who.checksums)
            resp = self._dispatch(req, user, path)
            if req.method in ("PUT", "POST") and resp.status == 200:
                resp.headers += [(k, v) for k, v in who.checksums.items()]
        except conditional.NotModified as nm:
            resp = Response(304, list(getattr(nm, "headers", [])))
        except Exception as exc:  # noqa: BLE001 - every failure is an S3 error to the client
            resp = S3Error.of(exc).response(rid, path, head=req.method == "HEAD")
        if "origin" in req.headers:  # CORS headers on every answer, errors included, as RGW sends them
            resp.headers += self._cors_headers(req, path, user)
        resp.headers += [("x-amz-request-id", rid), ("Date", s3_xml.http_date(self.wall()))]
        return resp

    def _preflight(self, req: Request, path: str, rid: str) -> Response:
        name = path.lstrip("/").partition("/")[0]
        try:
            if not name:
                raise S3Error("InvalidArgument", "a CORS preflight names a bucket")
            return cors.preflight(self.store.bucket(ANONYMOUS, name), req.headers)
        except S3Error as e:
            return e.response(rid, path)

    def _cors_headers(self, req: Request, path: str, user: User) -> list[tuple[str, str]]:
        name = path.lstrip("/").partition("/")[0]
        try:
            b = self.store.bucket(user, name) if name else None
        except S3Error:
            return []
        return cors.response_headers(b, req.method, req.headers) if b is not None else []

    def _dispatch(self, req: Request, user: User, path: str) -> Response:
        query = dict(parse_qsl(req.raw_query, keep_blank_values=True))
        authz.serving(req, query)
        name, _, key = path.lstrip("/").partition("/")
        m, store = req.method, self.store
        sub = routes.route(m, name, key, query)  # a request the gateway does not serve is refused here, unchanged
        if not name:
            authz.authorize(store, user, "s3:ListAllMyBuckets", "")
            return buckets.list_buckets(store, user)
        vid = query.get("versionId")
        if "x-amz-expected-bucket-owner" in req.headers and not (m == "PUT" and not key and not sub):
            self._check_expected_owner(user, name, req.headers)
        if sub == "attributes":  # s3:GetObject(Version), or failing it s3:GetObject(Version)Attributes
            self._authorize_attributes(user, name, key, vid)
        elif not (sub == "delete" and not key):  # DeleteObjects: each key on its own
            authz.authorize(store, user, policy.action(m, name, key, query), name, key or None, vid)
        if not key:
            return self._bucket_op(req, user, name, sub, query)
        if sub == "acl":
            return authz.object_acl(store, req, store.bucket(user, name), key, vid)
        if sub == "tagging":
            return tagging.object_tagging(store, req, store.bucket(user, name), key, vid)
        if sub == "retention":
            return object_lock.object_retention(store, req, user, store.bucket(user, name), key, vid)
        if sub == "legal-hold":
            return object_lock.object_legal_hold(store, req, store.bucket(user, name), key, vid)
        if sub in ("uploadId", "uploads"):
            return self.multipart.dispatch(req, user, name, key, query)
        if vid == "":
            raise S3Error("InvalidArgument", "version id must not be empty", ArgumentName="versionId")
        if sub == "attributes":
            return object_attributes.get_object_attributes(store, user, name, key, req.headers, vid)
        if m == "PUT" and "x-amz-copy-source" in req.headers:
            return copy_object.copy_object(store, user, name, key, req.headers, req.secure)
        if m == "PUT":
            return objects.put_object(store, user, name, key, req.headers, req.body, req.checksums, req.secure)
        if m in ("GET", "HEAD"):
            return objects.get_object(store, user, name, key, req.headers, head=m == "HEAD", version_id=vid,
                                      part_number=query.get("partNumber"))
        return objects.delete_object(store, user, name, key, vid, req.headers)  # routes has left DELETE alone

    def _authorize_attributes(self, user: User, name: str, key: str, vid: str | None) -> None:
        """RGWGetObjAttrs::verify_permission: GetObject's action first; only its access denial makes
        the attributes action the one that decides."""
        try:
            authz.authorize(self.store, user, "s3:GetObjectVersion" if vid is not None else "s3:GetObject",
                            name, key, vid)
        except S3Error as e:
            if e.code != "AccessDenied":
                raise
            authz.authorize(self.store, user, "s3:GetObjectVersionAttributes" if vid is not None
                            else "s3:GetObjectAttributes", name, key, vid)

    def _check_expected_owner(self, user: User, name: str, headers: dict[str, str]) -> None:
        """x-amz-expected-bucket-owner, before anything else is decided (CreateBucket has none to check);
        a bucket that does not exist is left to `authz.authorize`, which answers anonymous callers 403."""
        try:
            b = self.store.bucket(user, name)
        except S3Error:
            return
        ownership.check_expected(b, headers)

    def _bucket_op(self, req: Request, user: User, name: str, sub: str, query: dict[str, str]) -> Response:
        m, store = req.method, self.store
        config = _BUCKET_CONFIG.get(sub)
        if config is not None:
            return config(store, req, store.bucket(user, name))
        if sub == "versions":
            return versioning.list_versions(store, store.bucket(user, name), query)
        if sub == "uploads":
            return self.multipart.list_uploads(store.bucket(user, name), query)
        if sub == "delete":
            return delete_multi.delete_objects(store, user, name, req.headers, req.body)
        if m == "PUT":
            return buckets.create_bucket(store, user, name, req.headers)
        if m == "HEAD":
            store.bucket(user, name)
            return Response(200)
        if m == "DELETE":
            return buckets.delete_bucket(store, user, name)
        return buckets.list_objects(store, user, name, query)  # routes has left GET alone


# A bucket's configurations (sub-resource → its handler): each reads and writes one bucket attribute.
_BUCKET_CONFIG: dict[str, Callable[[Store, Request, Bucket], Response]] = {
    "policy": authz.bucket_policy, "acl": authz.bucket_acl, "tagging": tagging.bucket_tagging,
    "lifecycle": lifecycle.bucket_lifecycle, "versioning": versioning.bucket_versioning, "cors": cors.bucket_cors,
    "publicAccessBlock": public_access.bucket_public_access, "policyStatus": public_access.policy_status,
    "ownershipControls": ownership.bucket_ownership, "encryption": encryption.bucket_encryption,
    "object-lock": object_lock.bucket_object_lock,
}
