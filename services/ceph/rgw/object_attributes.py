"""GetObjectAttributes (`GET /bucket/key?attributes`): an object version's metadata without its data.

RGW serves it from Tentacle (20.2) on: `RGWGetObjAttrs` (rgw_op.cc: a GetObject that reads no data)
and `RGWGetObjAttrs_ObjStore_S3` (rgw_rest_s3.cc: `get_params`, `send_response`), added by ceph PR
#55259. What it answers, and what this module answers the same way:

- the version as GetObject finds it: 404 NoSuchKey for a missing key, or one whose latest version is a
  delete marker (with x-amz-delete-marker and its version id); 404 NoSuchVersion for an unknown
  `versionId`; 405 MethodNotAllowed for a `versionId` naming a delete marker (store.lookup).
- `x-amz-object-attributes`: names split at commas, compared case-blind (`recognize_attrs`); a name it
  does not know is ignored, and without the header RGW answers 200 with nothing in the document.
- `x-amz-max-parts` (default and cap 1000) and `x-amz-part-number-marker`, read after the object is
  found: a value that is not an integer is 400 InvalidPart ("Invalid value for MaxParts: ...").
- the document, the requested attributes in RGW's order: ETag (unquoted), Checksum (the
  x-amz-checksum-* stored at upload, and ChecksumType where one was stored: COMPOSITE for a multipart
  upload), ObjectParts (a multipart object only: its parts after the marker, up to max-parts, each
  with PartNumber, Size and its checksum; then PartsCount and TotalPartsCount, IsTruncated, MaxParts
  and PartNumberMarker when the request named them, NextPartNumberMarker when truncated),
  ObjectSize, StorageClass (STANDARD: the twin has one class).
- headers: Last-Modified, and x-amz-version-id on a versioned bucket or when a version was named.

RGW names the root `GetObjectAttributes`, outside the S3 namespace (AWS: `GetObjectAttributesResponse`
in it); SDKs read either. Authorization is policy.py's s3:GetObject (s3:GetObjectVersion for a named
version), or, failing that, s3:GetObjectAttributes (s3:GetObjectVersionAttributes): the gateway asks
for the second when the first is denied, as `RGWGetObjAttrs::verify_permission` does.
Parts are numbered by their place in the object, as GetObject's `partNumber` counts them here.
"""

from __future__ import annotations

from collections.abc import Mapping

from services.ceph.rgw import s3_xml
from services.ceph.rgw.bucket_index import ObjectEntry
from services.ceph.rgw.s3_errors import S3Error
from services.ceph.rgw.s3_xml import element as el
from services.ceph.rgw.store import Store
from services.ceph.rgw.users import User
from services.ceph.rgw.wire import Response

NAMES = ("etag", "checksum", "objectparts", "objectsize", "storageclass")  # recognize_attrs' names
MAX_PARTS = 1000
_LONG = 1 << 63  # strict_strtol's range: a bigger value "seems to be invalid"


def requested(header: str) -> set[str]:
    """The attributes `x-amz-object-attributes` names (lower case); RGW compares each name whole."""
    return {n for n in (name.lower() for name in header.split(",")) if n in NAMES}


def _int_header(headers: Mapping[str, str], name: str, what: str) -> int | None:
    value = headers.get(name)
    if value is None:
        return None
    try:
        n = int(value.strip())
    except ValueError:
        raise S3Error("InvalidPart", f"Invalid value for {what}: Expected option value to be integer, "
                      f"got '{value}'") from None
    if not -_LONG <= n < _LONG:
        raise S3Error("InvalidPart", f"Invalid value for {what}: The option value '{value}' seems to be invalid")
    return n


def get_object_attributes(store: Store, user: User, name: str, key: str, headers: Mapping[str, str],
                          version_id: str | None = None) -> Response:
    b = store.bucket(user, name)
    with store.lock:
        e = store.lookup(b, key, version_id)
    # read after the object is found, as RGW reads them in execute
    max_parts = _int_header(headers, "x-amz-max-parts", "MaxParts")
    marker = _int_header(headers, "x-amz-part-number-marker", "PartNumberMarker")
    want = requested(headers.get("x-amz-object-attributes", ""))
    s = ""
    if "etag" in want:
        s += el("ETag", e.etag)
    if "checksum" in want:
        s += f"<Checksum>{_checksums(e)}</Checksum>"
    if "objectparts" in want and e.parts:
        s += _object_parts(e, None if max_parts is None else min(max_parts, MAX_PARTS), marker)
    if "objectsize" in want:
        s += el("ObjectSize", e.size)
    if "storageclass" in want:
        s += el("StorageClass", e.attrs.get("x-amz-storage-class", "STANDARD"))
    hdrs = [("Content-Type", "application/xml"), ("Last-Modified", s3_xml.http_date(e.mtime))]
    if b.versioning or version_id is not None:
        hdrs.append(("x-amz-version-id", e.version_id))
    return Response(200, hdrs, f'<?xml version="1.0" encoding="UTF-8"?><GetObjectAttributes>{s}'
                    "</GetObjectAttributes>".encode())


def _checksum_element(header: str) -> str:
    return "Checksum" + header.removeprefix("x-amz-checksum-").upper()  # x-amz-checksum-crc32 → ChecksumCRC32


def _checksums(e: ObjectEntry) -> str:
    kind = e.checksums.get("x-amz-checksum-type")
    values = "".join(el(_checksum_element(k), v) for k, v in sorted(e.checksums.items()) if k != "x-amz-checksum-type")
    return values + (el("ChecksumType", kind) if kind and values else "")


def _object_parts(e: ObjectEntry, max_parts: int | None, marker: int | None) -> str:
    """A page of the object's parts: those after `marker`, at most `max_parts` (1000 unless named)."""
    limit, after = MAX_PARTS if max_parts is None else max_parts, marker or 0
    numbers = [n for n in range(1, len(e.parts) + 1) if n > after]
    page, truncated = numbers[: max(limit, 0)], len(numbers) > max(limit, 0)
    algorithm = _part_algorithm(e)
    s = ""
    for n in page:
        checksum = e.part_checksums[n - 1] if n <= len(e.part_checksums) else ""
        s += (f"<Part>{el('PartNumber', n)}{el('Size', e.parts[n - 1])}"
              + (el(algorithm, checksum) if checksum and algorithm else "") + "</Part>")
    s += el("PartsCount", len(e.parts)) + el("TotalPartsCount", len(e.parts))
    s += el("IsTruncated", "true" if truncated else "false")
    if max_parts is not None:
        s += el("MaxParts", max_parts)
    if truncated:
        s += el("NextPartNumberMarker", page[-1] if page else after)
    if marker is not None:
        s += el("PartNumberMarker", marker)
    return f"<ObjectParts>{s}</ObjectParts>"


def _part_algorithm(e: ObjectEntry) -> str:
    """The element of the parts' checksums: the upload's algorithm, the one its object checksum has."""
    return next((_checksum_element(k) for k in e.checksums if k != "x-amz-checksum-type"), "")
