"""A bucket's PublicAccessBlock (`?publicAccessBlock`: Put, Get, Delete) and its policy status
(`?policyStatus`), as RGW (Squid) serves them.

The four settings and where RGW applies them (rgw_op.cc, rgw_common.cc):
- BlockPublicAcls: a PutBucketAcl, PutObjectAcl, PutObject, CopyObject or CreateMultipartUpload whose ACL
  is public (a grant to AllUsers or AuthenticatedUsers, canned public-read, public-read-write or
  authenticated-read) is refused, 403 AccessDenied; ACLs already there stay.
- IgnorePublicAcls: such grants, on the bucket and on its objects, no longer give anyone access.
- BlockPublicPolicy: a PutBucketPolicy whose policy is public (`policy.Policy.is_public`) is refused, 403.
- RestrictPublicBuckets: while the bucket's policy is public, only the bucket owner's own account
  (tenant) gets anything from it.
A bucket without a configuration answers GetPublicAccessBlock with all four false, as RGW does
("return the default"); DeletePublicAccessBlock returns it to that.

GetBucketPolicyStatus: IsPublic when the bucket policy is public or the bucket ACL is (RGW's
`rgw::IAM::is_public(policy) || bucket_acl.is_public()`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from services.ceph.rgw import acl, s3_xml
from services.ceph.rgw.bucket_index import Bucket
from services.ceph.rgw.s3_errors import S3Error
from services.ceph.rgw.s3_xml import element as el
from services.ceph.rgw.store import Store
from services.ceph.rgw.wire import Request, Response

SETTINGS = ("BlockPublicAcls", "IgnorePublicAcls", "BlockPublicPolicy", "RestrictPublicBuckets")


def setting(b: Bucket, name: str) -> bool:
    return bool(b.public_access and b.public_access.get(name))


def parse(body: bytes) -> dict[str, bool]:
    doc = s3_xml.parse(body, "PublicAccessBlockConfiguration")
    conf = {}
    for name in SETTINGS:
        value = (doc.findtext(name) or "false").strip().lower()
        if value not in ("true", "false"):
            raise S3Error("MalformedXML", f"{name} must be true or false, not {value!r}")
        conf[name] = value == "true"
    return conf


def bucket_public_access(store: Store, req: Request, b: Bucket) -> Response:
    if req.method == "PUT":
        conf = parse(req.body)
        store.configure(b, "public_access", conf, json.dumps(conf).encode())
        return Response(200)
    if req.method == "GET":
        inner = "".join(el(n, str(setting(b, n)).lower()) for n in SETTINGS)
        return Response(200, [("Content-Type", "application/xml")],
                        s3_xml.document("PublicAccessBlockConfiguration", inner))
    if req.method == "DELETE":
        store.configure(b, "public_access", None, None)
        return Response(204)
    raise S3Error("MethodNotAllowed", f"{req.method} is not allowed on ?publicAccessBlock")


def policy_status(store: Store, req: Request, b: Bucket) -> Response:
    public = (b.policy is not None and b.policy.is_public()) or acl.is_public(b.acl)
    body = s3_xml.document("PolicyStatus", el("IsPublic", str(public).lower()))
    return Response(200, [("Content-Type", "application/xml")], body)


def check_acl(b: Bucket, grants: Sequence[Sequence[str]] | None) -> None:
    """BlockPublicAcls: refuse a request that would set a public ACL in this bucket."""
    if grants and setting(b, "BlockPublicAcls") and acl.is_public(grants):
        raise S3Error("AccessDenied", "Access Denied: the bucket's PublicAccessBlock blocks public ACLs",
                      f"/{b.name}")


def effective_grants(b: Bucket, grants: Sequence[Sequence[str]]) -> Sequence[Sequence[str]]:
    """IgnorePublicAcls: the grants that still count."""
    if not setting(b, "IgnorePublicAcls"):
        return grants
    return [g for g in grants if g[0] not in (acl.ALL_USERS, acl.AUTHENTICATED_USERS)]
