"""Objects: PutObject (If-Match / If-None-Match: conditional_write.py), GetObject/HeadObject (whole, a
Range, or one part of a multipart upload) and DeleteObject, over the store's striped data and versioned
index (store.py)."""

from __future__ import annotations

from itertools import chain

from services.ceph.rgw import (
    conditional,
    conditional_write,
    encryption,
    multipart,
    new_object,
    object_lock,
    ownership,
    s3_xml,
    tagging,
)
from services.ceph.rgw.bucket_index import ObjectEntry, valid_id
from services.ceph.rgw.entity import check_key, object_attrs, parse_range
from services.ceph.rgw.s3_errors import S3Error
from services.ceph.rgw.store import Store
from services.ceph.rgw.users import User
from services.ceph.rgw.wire import Response, part_len

MAX_PUT = 5 << 30  # S3's single PUT limit
GATHER_MIN = 1 << 20  # a GET of more is sent from the chunks' buffers (wire.Part), not a joined copy


def put_object(store: Store, user: User, name: str, key: str, headers: dict[str, str], body: bytes,
               checksums: dict[str, str] | None = None, secure: bool = False) -> Response:
    b = store.bucket(user, name)
    check_key(key)
    if len(body) > MAX_PUT:
        raise S3Error("EntityTooLarge", "a single PUT is limited to 5 GiB; use a multipart upload")
    attrs = object_attrs(headers)
    grants, lock = new_object.admit(b, headers, secure, store.wall())  # before a byte is written
    tags = tagging.from_header(headers.get("x-amz-tagging", ""))
    check = conditional_write.precondition(headers, name, key)
    if check is not None:  # refused before any stripe is written; checked again atomically at commit
        with store.lock:
            check(b.latest(key))
    tag = store.new_tag()
    etag, pieces = store.write_data_md5(f"{b.marker}__:{tag}_{key}", f"{b.marker}__shadow_.{tag}", body, headers)
    entry = ObjectEntry(key, len(body), etag, store.wall(), ownership.object_owner(b, user, headers), pieces, attrs,
                        acl=grants,
                        checksums=dict(checksums or {}), tags=tags)
    for k, v in object_lock.with_default(b, lock, entry.mtime).items():
        setattr(entry, k, v)
    vh = store.commit(b, entry, check=check)  # on failure it frees the data unless the entry may have landed
    return Response(200, [("ETag", f'"{entry.etag}"'), *vh])

def get_object(store: Store, user: User, name: str, key: str, headers: dict[str, str], head: bool,
               version_id: str | None = None, part_number: str | None = None) -> Response:
    """GET/HEAD of an object version, whole, a `Range`, or one part of a multipart upload
    (`partNumber`: the bytes that part had; an object not uploaded in parts is one part)."""
    if part_number is not None and "range" in headers:
        raise S3Error("InvalidRequest", "Cannot specify both Range header and partNumber query parameter")
    b = store.bucket(user, name)
    e = store.lookup(b, key, version_id)
    hdrs = [("ETag", f'"{e.etag}"'), ("Last-Modified", s3_xml.http_date(e.mtime)), ("Accept-Ranges", "bytes")]
    if b.versioning:
        hdrs.append(("x-amz-version-id", e.version_id))
    try:
        conditional.check(headers, e.etag, e.mtime)
    except conditional.NotModified:
        raise _NotModified(hdrs) from None
    encryption.check_read(headers)  # RGW's prepare_decrypt, once the object and its conditions are read
    hdrs += [(k, v) for k, v in e.attrs.items()] + tagging.count_header(e.tags)
    hdrs += object_lock.response_headers(store, user, b, e)
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
    parts = store.iter_parts(e.pieces, first, length, gather=length > GATHER_MIN)
    head_part = next(parts, None)
    if head_part is None or part_len(head_part) == length:  # all in one RADOS object (a small object)
        return Response(status, hdrs, length=length, parts=[] if head_part is None else [head_part])
    return Response(status, hdrs, length=length, parts=chain([head_part], parts))

def delete_object(store: Store, user: User, name: str, key: str, version_id: str | None = None,
                  headers: dict[str, str] | None = None) -> Response:
    """S3 DELETE: a named version is removed for good (unless its object lock refuses); otherwise an
    unversioned bucket drops the object, a versioned one gains a delete marker (the "null" one when
    versioning is suspended)."""
    b = store.bucket(user, name)
    hdrs = []
    if version_id is not None:
        e = b.version(key, version_id)
        if e is None:
            if not valid_id(version_id):
                raise S3Error("InvalidArgument", "invalid version id specified", ArgumentName="versionId",
                              ArgumentValue=version_id)
            return Response(204, [("x-amz-version-id", version_id)])
        object_lock.check_delete(store, user, b, e, headers or {})
        store.drop_version(b, e)
        hdrs.append(("x-amz-version-id", e.version_id))
        if e.delete_marker:
            hdrs.append(("x-amz-delete-marker", "true"))
    elif not b.versioning:
        e = b.latest(key)
        if e is not None:
            store.drop_version(b, e)
    else:
        dm = ObjectEntry(key, 0, "", store.wall(), user.id, [], {}, delete_marker=True)
        hdrs = store.commit(b, dm) + [("x-amz-delete-marker", "true")]
    return Response(204, hdrs)



def _part_range(e: ObjectEntry, part_number: str) -> tuple[int, int] | None:
    sizes, n = e.parts or [e.size], multipart.part_number(part_number)
    if n > len(sizes):  # RGW's answer (S3 says InvalidPartNumber, 416)
        raise S3Error("InvalidPart", "the requested part number is not satisfiable", PartNumber=part_number)
    first = sum(sizes[: n - 1])
    return (first, first + sizes[n - 1] - 1) if sizes[n - 1] else None



class _NotModified(conditional.NotModified):
    def __init__(self, headers: list[tuple[str, str]]) -> None:
        super().__init__()
        self.headers = headers
