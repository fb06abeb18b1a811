"""Buckets: create, delete, list them, and list a bucket's objects (ListObjects and ListObjectsV2).

A bucket is a record in the index pool (`.bucket.meta.<tenant>:<name>`) and one attribute object
beside it for each configuration it has (`#versioning`, `#acl`, `#policy`, `#tagging`, `#lifecycle`,
`#cors`, `#public_access`, `#ownership`, `#encryption`, `#object_lock`);
listings are served from the in-memory index (bucket_index.py), a page at a time.
"""

from __future__ import annotations

import base64
import bisect
import json
import re

from services.ceph.rgw import acl, object_lock, ownership, s3_xml
from services.ceph.rgw.bucket_index import Bucket, ObjectLock, meta_name
from services.ceph.rgw.s3_errors import S3Error
from services.ceph.rgw.store import Store
from services.ceph.rgw.users import User
from services.ceph.rgw.wire import Response

_BUCKET_RE = re.compile(r"^[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9]$")
ATTRS = ("versioning", "policy", "acl", "tagging", "lifecycle", "cors", "public_access", "ownership",
         "encryption", "object_lock")  # a bucket's attribute objects


def owner(u: User) -> s3_xml.Owner:
    return s3_xml.Owner(u.id, u.display_name)


def list_buckets(store: Store, user: User) -> Response:
    mine = sorted((b for b in store.buckets.values() if b.owner.id == user.id), key=lambda b: b.name)
    body = s3_xml.list_buckets(owner(user), [s3_xml.BucketItem(b.name, b.created) for b in mine])
    return Response(200, [("Content-Type", "application/xml")], body)


def create_bucket(store: Store, user: User, name: str, headers: dict[str, str] | None = None) -> Response:
    if not _BUCKET_RE.match(name) or ".." in name:
        raise S3Error("InvalidBucketName", f"{name!r} is not a valid bucket name", f"/{name}", BucketName=name)
    grants = acl.from_headers(headers or {}, for_object=False) or []
    mode = ownership.from_create(headers or {}, grants)  # x-amz-object-ownership, from Tentacle's RGW on
    locked = object_lock.enabled_at_creation(headers or {})
    existing = store.buckets.get((user.tenant, name))
    if existing is not None:
        # RGWCreateBucket::execute: the same owner re-creating a bucket succeeds and changes nothing
        # (its default zonegroup answers as us-east-1 does, not BucketAlreadyOwnedByYou); anyone else: 409
        if existing.owner.id == user.id:
            return Response(200, [("Location", f"/{name}")])
        raise S3Error("BucketAlreadyExists", f"bucket {name} already exists", f"/{name}", BucketName=name)
    marker = store.new_marker()
    b = Bucket(name, user.tenant, user, store.wall(), marker)
    record = json.dumps({"name": name, "tenant": user.tenant, "owner": user.id, "marker": marker,
                         "created": b.created}).encode()
    store.put(store.index_pool, meta_name(user.tenant, name), record)
    if grants:
        store.configure(b, "acl", grants, json.dumps(grants).encode())
    if mode:
        store.configure(b, "ownership", mode, mode.encode())
    if locked:  # RGWCreateBucket: object lock comes with versioning, both for good
        store.configure(b, "versioning", "Enabled", b"Enabled")
        store.configure(b, "object_lock", ObjectLock(), object_lock.to_json(ObjectLock()))
    with store.lock:
        store.buckets[(user.tenant, name)] = b
    return Response(200, [("Location", f"/{name}")])


def delete_bucket(store: Store, user: User, name: str) -> Response:
    b = store.bucket(user, name)
    if b.versions:
        raise S3Error("BucketNotEmpty", "the bucket you tried to delete is not empty", f"/{name}", BucketName=name)
    store.remove("remove bucket record", store.index_pool, meta_name(b.tenant, name))
    with store.lock:
        store.buckets.pop((b.tenant, b.name), None)
    store.drop_meta(b, *ATTRS)  # what a deleted bucket leaves in the index pool besides its record
    return Response(204)


def list_objects(store: Store, user: User, name: str, q: dict[str, str]) -> Response:
    b = store.bucket(user, name)
    prefix, delimiter = q.get("prefix", ""), q.get("delimiter", "")
    url = q.get("encoding-type", "") == "url"
    try:
        max_keys = min(int(q.get("max-keys", "1000")), 1000)
    except ValueError:
        raise S3Error("InvalidArgument", "max-keys must be an integer") from None
    if max_keys < 0:
        raise S3Error("InvalidArgument", "max-keys must not be negative")
    v2 = q.get("list-type") == "2"
    token = q.get("continuation-token")
    if v2 and token:
        try:
            after = base64.urlsafe_b64decode(token.encode()).decode()
        except ValueError:
            raise S3Error("InvalidArgument", "the continuation token is not valid") from None
    else:
        after = q.get("start-after", "") if v2 else q.get("marker", "")
    listing = _listing(store, b, prefix, delimiter, after, max_keys)
    if v2:
        nxt = base64.urlsafe_b64encode(listing.last.encode()).decode() if listing.truncated and max_keys else ""
        body = s3_xml.list_objects_v2(name, prefix, delimiter, max_keys, url, listing, token, nxt,
                                      q.get("start-after"), q.get("fetch-owner", "").lower() == "true")
    else:
        body = s3_xml.list_objects_v1(name, prefix, delimiter, max_keys, url, listing, q.get("marker", ""))
    return Response(200, [("Content-Type", "application/xml")], body)


def _listing(store: Store, b: Bucket, prefix: str, delimiter: str, after: str, max_keys: int) -> s3_xml.Listing:
    with store.lock:
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
                contents.append(s3_xml.ObjectItem(k, e.mtime, f'"{e.etag}"', e.size, owner(b.owner)))
            last = cp or k
        return s3_xml.Listing(contents, prefixes, truncated, last)

