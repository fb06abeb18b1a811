"""Bucket versioning: the `?versioning` configuration document, and ListObjectVersions.

A bucket starts unversioned; once Enabled it can only be Suspended, never unversioned again (S3
accepts no other Status). Enabled: every write and every plain DELETE (a delete marker) makes a
new version with a fresh id. Suspended: they make the "null" version, replacing the previous
null one; older versions stay. Where versions live, and their ids, is `bucket_index`.
"""

from __future__ import annotations

import bisect

from services.ceph.rgw import object_lock, s3_xml
from services.ceph.rgw.bucket_index import Bucket
from services.ceph.rgw.s3_errors import S3Error
from services.ceph.rgw.s3_xml import element as el
from services.ceph.rgw.store import Store
from services.ceph.rgw.wire import Request, Response

MAX_LIST = 1000


def parse_config(body: bytes) -> str:
    doc = s3_xml.parse(body, "VersioningConfiguration")
    status = (doc.findtext("Status") or "").strip()
    if status not in ("Enabled", "Suspended"):
        raise S3Error("IllegalVersioningConfigurationException", "the versioning configuration specified in the "
                      "request is invalid: Status must be Enabled or Suspended")
    if (doc.findtext("MfaDelete") or "Disabled").strip() == "Enabled":
        raise S3Error("NotImplemented", "MFA delete is not supported by this gateway")
    return status


def config_xml(status: str) -> bytes:
    return s3_xml.document("VersioningConfiguration", el("Status", status) if status else "")


def bucket_versioning(store: Store, req: Request, b: Bucket) -> Response:
    """`?versioning` on a bucket: PUT sets its status, GET returns it."""
    if req.method == "PUT":
        status = parse_config(req.body)
        object_lock.check_versioning(b, status)
        store.configure(b, "versioning", status, status.encode())
        return Response(200)
    if req.method == "GET":
        return Response(200, [("Content-Type", "application/xml")], config_xml(b.versioning))
    raise S3Error("MethodNotAllowed", f"{req.method} is not allowed on ?versioning")


def list_versions(store: Store, b: Bucket, q: dict[str, str]) -> Response:
    prefix, delimiter = q.get("prefix", ""), q.get("delimiter", "")
    key_marker, id_marker = q.get("key-marker", ""), q.get("version-id-marker", "")
    try:
        max_keys = min(int(q.get("max-keys", MAX_LIST)), MAX_LIST)
    except ValueError:
        raise S3Error("InvalidArgument", "max-keys must be an integer") from None
    if id_marker and not key_marker:
        raise S3Error("InvalidArgument", "a version-id marker cannot be specified without a key marker",
                      ArgumentName="version-id-marker", ArgumentValue=id_marker)
    owner = s3_xml.Owner(b.owner.id, b.owner.display_name)
    out: list[str] = []
    prefixes: list[str] = []
    count = 0
    truncated = False
    next_key = next_id = ""
    with store.lock:
        start = bisect.bisect_left(b.version_keys, max(key_marker, prefix))
        for key in b.version_keys[start:]:
            if not key.startswith(prefix):
                break
            history = b.versions[key]
            if key == key_marker:
                if not id_marker:
                    continue
                ids = [v.version_id for v in history]
                history = history[ids.index(id_marker) + 1:] if id_marker in ids else []
            if delimiter:
                i = key.find(delimiter, len(prefix))
                if i >= 0:
                    cp = key[: i + len(delimiter)]
                    if (prefixes and prefixes[-1] == cp) or (key_marker.startswith(cp) and key_marker != key):
                        continue
                    if count >= max_keys:
                        truncated = True
                        break
                    prefixes.append(cp)
                    count += 1
                    next_key, next_id = cp, ""
                    continue
            for v in history:
                if count >= max_keys:
                    truncated = True
                    break
                latest = v is b.versions[key][0]
                common = (el("Key", key) + el("VersionId", v.version_id) + el("IsLatest", str(latest).lower())
                          + el("LastModified", s3_xml.iso8601(v.mtime)))
                if v.delete_marker:
                    out.append(f"<DeleteMarker>{common}{owner.xml()}</DeleteMarker>")
                else:
                    out.append(f"<Version>{common}{el('ETag', chr(34) + v.etag + chr(34))}{el('Size', v.size)}"
                               f"{el('StorageClass', 'STANDARD')}{owner.xml()}</Version>")
                count += 1
                next_key, next_id = key, v.version_id
            if truncated:
                break
    s = (el("Name", b.name) + el("Prefix", prefix) + el("KeyMarker", key_marker) + el("VersionIdMarker", id_marker)
         + el("MaxKeys", max_keys) + (el("Delimiter", delimiter) if delimiter else "")
         + el("IsTruncated", "true" if truncated else "false"))
    if truncated:
        s += el("NextKeyMarker", next_key) + (el("NextVersionIdMarker", next_id) if next_id else "")
    s += "".join(out) + "".join(f"<CommonPrefixes>{el('Prefix', p)}</CommonPrefixes>" for p in prefixes)
    return Response(200, [("Content-Type", "application/xml")], s3_xml.document("ListVersionsResult", s))
