"""CopyObject and the source side of UploadPartCopy.

The source is `x-amz-copy-source: /bucket/key[?versionId=…]` (URL-encoded, leading slash optional)
and must be readable by the caller; its `x-amz-copy-source-if-*` conditions fail with 412. The
copy reads the source through RADOS and writes new RADOS objects, so every byte of the copy goes
through the EC pool again (RGW shares tail objects by refcount within a zone; this costs I/O, not
correctness). `x-amz-metadata-directive: COPY` (the default) keeps the source's metadata and
content headers, `REPLACE` takes the request's; `x-amz-tagging-directive` does the same for the
tag set. Copying an object onto itself with COPY is the
one copy S3 refuses, as it would change nothing. The ETag is the source's, as RGW keeps it.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

from services.ceph.rgw import (
    authz,
    conditional,
    new_object,
    object_lock,
    ownership,
    s3_xml,
    tagging,
)
from services.ceph.rgw.bucket_index import ObjectEntry
from services.ceph.rgw.entity import check_key, object_attrs
from services.ceph.rgw.s3_errors import S3Error
from services.ceph.rgw.s3_xml import element as el
from services.ceph.rgw.store import Store
from services.ceph.rgw.users import User
from services.ceph.rgw.wire import Response

MAX_COPY = 5 << 30  # larger objects need UploadPartCopy


def parse_source(value: str) -> tuple[str, str, str | None]:
    path, _, query = value.partition("?")
    bucket, _, key = unquote(path).lstrip("/").partition("/")
    if not bucket or not key:
        raise S3Error("InvalidArgument", "copy source must be of the form bucket/key", ArgumentName="x-amz-copy-source",
                      ArgumentValue=value)
    vid = None
    if query:
        name, _, v = query.partition("=")
        if name != "versionId" or not v:
            raise S3Error("InvalidArgument", "unsupported copy source parameter", ArgumentName="x-amz-copy-source",
                          ArgumentValue=value)
        vid = unquote(v)
    return bucket, key, vid


def _source(store: Store, user: User, headers: dict[str, str]) -> tuple[str, str, ObjectEntry]:
    bucket, key, vid = parse_source(headers["x-amz-copy-source"])
    authz.authorize(store, user, "s3:GetObjectVersion" if vid else "s3:GetObject", bucket, key, vid)
    src = store.bucket(user, bucket)
    ownership.check_expected(src, headers, "x-amz-source-expected-bucket-owner")
    e = store.lookup(src, key, vid)
    conditional.check(headers, e.etag, e.mtime, prefix="x-amz-copy-source-")
    return bucket, key, e


_COPY_RANGE_RE = re.compile(r"bytes=(\d+)-(\d+)")


def read_source(store: Store, user: User, headers: dict[str, str], ranged: bool) -> tuple[bytes, str]:
    """The bytes an UploadPartCopy takes (all, or `x-amz-copy-source-range: bytes=a-b`) and the source ETag."""
    _, _, e = _source(store, user, headers)
    first, length = 0, e.size
    rng = headers.get("x-amz-copy-source-range", "")
    if ranged and rng:
        m = _COPY_RANGE_RE.fullmatch(rng)
        if m is None or int(m[1]) > int(m[2]):
            raise S3Error("InvalidArgument", "the x-amz-copy-source-range value must be of the form bytes=first-last "
                          "where first and last are the zero-based offsets of the first and last bytes to copy",
                          ArgumentName="x-amz-copy-source-range", ArgumentValue=rng)
        if int(m[2]) >= e.size:  # well-formed, past the source's end: RGW's -ERANGE (s3-tests: InvalidRange)
            raise S3Error("InvalidRange", "the requested range is not satisfiable", ArgumentValue=rng)
        first, length = int(m[1]), int(m[2]) - int(m[1]) + 1
    return store.read_data(e.pieces, first, length), e.etag


def _directive(headers: dict[str, str], name: str) -> str:
    directive = headers.get(name, "COPY").upper()
    if directive not in ("COPY", "REPLACE"):
        raise S3Error("InvalidArgument", f"unknown {name.removeprefix('x-amz-')}", ArgumentName=name,
                      ArgumentValue=directive)
    return directive


def copy_object(store: Store, user: User, name: str, key: str, headers: dict[str, str],
                secure: bool = False) -> Response:
    check_key(key)
    dst = store.bucket(user, name)
    src_bucket, src_key, e = _source(store, user, headers)
    directive = _directive(headers, "x-amz-metadata-directive")
    tags = dict(e.tags) if _directive(headers, "x-amz-tagging-directive") == "COPY" else \
        tagging.from_header(headers.get("x-amz-tagging", ""))
    if e.size > MAX_COPY:
        raise S3Error("InvalidRequest", "the specified copy source is larger than the maximum allowable size for a "
                      "copy source: 5368709120")
    same = (store.bucket(user, src_bucket) is dst and src_key == key)
    if same and directive == "COPY":
        raise S3Error("InvalidRequest", "This copy request is illegal because it is trying to copy an object to "
                      "itself without changing the object's metadata, storage class, website redirect location or "
                      "encryption attributes.")
    attrs = dict(e.attrs) if directive == "COPY" else object_attrs(headers)
    # the copy's own ACL, encryption and lock: none of the source's comes with it
    grants, lock = new_object.admit(dst, headers, secure, store.wall())
    data = store.read_data(e.pieces, 0, e.size)
    tag = store.new_tag()
    pieces = store.write_data(f"{dst.marker}__:{tag}_{key}", f"{dst.marker}__shadow_.{tag}", data)
    entry = ObjectEntry(key, e.size, e.etag, store.wall(), ownership.object_owner(dst, user, headers), pieces, attrs,
                        acl=grants,
                        checksums=dict(e.checksums), tags=tags)  # same bytes, same checksums
    for k, v in object_lock.with_default(dst, lock, entry.mtime).items():
        setattr(entry, k, v)
    vh = store.commit(dst, entry)  # on failure it frees the copy unless its entry may have landed
    hdrs = [("Content-Type", "application/xml"), *vh]
    if dst.versioning or e.version_id != "null":
        hdrs.append(("x-amz-copy-source-version-id", e.version_id))
    body = s3_xml.document("CopyObjectResult", el("LastModified", s3_xml.iso8601(entry.mtime))
                           + el("ETag", f'"{entry.etag}"'))
    return Response(200, hdrs, body)
