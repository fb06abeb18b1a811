"""DeleteObjects (`POST /bucket?delete`): up to 1,000 keys in one request, each deleted as a single
DELETE would be, each failure reported per key rather than failing the request. In Quiet mode
only the failures are listed. The body must carry an integrity check (Content-MD5 or, from newer
SDKs, an x-amz-checksum-* that the authenticator has already verified), as S3 requires.
"""

from __future__ import annotations

import hashlib

from services.ceph.rgw import authz, objects, s3_xml
from services.ceph.rgw.entity import check_md5
from services.ceph.rgw.s3_errors import S3Error
from services.ceph.rgw.s3_xml import element as el
from services.ceph.rgw.store import Store
from services.ceph.rgw.users import User
from services.ceph.rgw.wire import Response

MAX_KEYS = 1000


def delete_objects(store: Store, user: User, name: str, headers: dict[str, str], body: bytes) -> Response:
    store.bucket(user, name)
    if "content-md5" not in headers and not any(h.startswith("x-amz-checksum-") and h != "x-amz-checksum-algorithm"
                                                for h in headers):
        raise S3Error("InvalidRequest", "Missing required header for this request: Content-MD5")
    check_md5(headers, hashlib.md5(body).digest())
    doc = s3_xml.parse(body, "Delete")
    quiet = (doc.findtext("Quiet") or "").strip().lower() == "true"
    objs = doc.findall("Object")
    if not objs or len(objs) > MAX_KEYS:
        raise S3Error("MalformedXML", f"a Delete request names 1 to {MAX_KEYS} objects")
    out = []
    for o in objs:
        key = o.findtext("Key")
        if key is None:
            raise S3Error("MalformedXML", "each Object needs a Key")
        vid = o.findtext("VersionId")
        try:
            authz.authorize(store, user, "s3:DeleteObjectVersion" if vid else "s3:DeleteObject", name, key, vid)
            resp = objects.delete_object(store, user, name, key, vid, headers)
        except S3Error as e:
            out.append(f"<Error>{el('Key', key)}{el('VersionId', vid) if vid else ''}{el('Code', e.code)}"
                       f"{el('Message', e.message)}</Error>")
            continue
        if quiet:
            continue
        h = dict(resp.headers)
        s = el("Key", key)
        if vid:
            s += el("VersionId", vid)
        if h.get("x-amz-delete-marker") == "true":
            s += el("DeleteMarker", "true")
            s += el("DeleteMarkerVersionId", h.get("x-amz-version-id", ""))
        out.append(f"<Deleted>{s}</Deleted>")
    return Response(200, [("Content-Type", "application/xml")], s3_xml.document("DeleteResult", "".join(out)))
