"""A bucket's Object Ownership (`?ownershipControls`: Put, Get, Delete; CreateBucket's
`x-amz-object-ownership`), and the `x-amz-expected-bucket-owner` condition.

This part follows Tentacle's RGW (20.2: ceph PR #64152 "rgw: support S3 Object Ownership controls to
disable object ACLs", s3-tests PR #660); the rest of the twin follows Squid, which has no handler for
`?ownershipControls`. The three settings:
- ObjectWriter: the uploader owns the object (what every bucket did before Tentacle).
- BucketOwnerPreferred: an upload with the canned ACL `bucket-owner-full-control` is owned by the
  bucket owner; any other upload by its writer.
- BucketOwnerEnforced: ACLs are disabled. The bucket owner owns every object written from now on;
  PutBucketAcl, PutObjectAcl and uploads (PutObject, CopyObject, CreateMultipartUpload) with an ACL
  other than `bucket-owner-full-control` are refused, 400 AccessControlListNotSupported; object ACLs
  no longer give anyone anything (authz.py). A CreateBucket asking for it with a non-private ACL is
  refused, 400 InvalidBucketAclWithObjectOwnership, as S3 does.
A bucket created without the header has no ownership controls, as on RGW (s3-tests
test_create_bucket_no_ownership_controls: GetBucketOwnershipControls answers 404
OwnershipControlsNotFoundError; AWS would say BucketOwnerEnforced) and behaves as ObjectWriter.

`x-amz-expected-bucket-owner` (and `x-amz-source-expected-bucket-owner` for the source of CopyObject
and UploadPartCopy): RGW (Squid, ceph PR #61215; s3-tests test_expected_bucket_owner) compares it with
the bucket owner's id (`uid`, or `tenant$uid`), and a mismatch is 403 AccessDenied before anything runs.
"""

from __future__ import annotations

from collections.abc import Sequence

from services.ceph.rgw import s3_xml
from services.ceph.rgw.bucket_index import Bucket
from services.ceph.rgw.s3_errors import S3Error
from services.ceph.rgw.s3_xml import element as el
from services.ceph.rgw.store import Store
from services.ceph.rgw.users import User
from services.ceph.rgw.wire import Request, Response

MODES = ("BucketOwnerPreferred", "ObjectWriter", "BucketOwnerEnforced")
HEADER = "x-amz-object-ownership"
FULL_CONTROL = "bucket-owner-full-control"  # the one ACL BucketOwnerEnforced lets through
_ACL_HEADERS = ("x-amz-acl", "x-amz-grant-read", "x-amz-grant-write", "x-amz-grant-read-acp",
                "x-amz-grant-write-acp", "x-amz-grant-full-control")


def enforced(b: Bucket) -> bool:
    return b.ownership == "BucketOwnerEnforced"


def _mode(value: str, error: S3Error) -> str:
    if value not in MODES:
        raise error
    return value


def from_create(headers: dict[str, str], grants: Sequence[Sequence[str]]) -> str:
    """CreateBucket's `x-amz-object-ownership` ("" without it), refused with an ACL it disables."""
    if HEADER not in headers:
        return ""
    value = headers[HEADER].strip()
    mode = _mode(value, S3Error("InvalidArgument", f"invalid x-amz-object-ownership {value!r}",
                                ArgumentName=HEADER, ArgumentValue=value))
    if mode == "BucketOwnerEnforced" and grants:  # private and bucket-owner-full-control grant nothing on a bucket
        raise S3Error("InvalidBucketAclWithObjectOwnership",
                      "Bucket cannot have ACLs set with ObjectOwnership's BucketOwnerEnforced setting")
    return mode


def parse(body: bytes) -> str:
    doc = s3_xml.parse(body, "OwnershipControls")
    rules = doc.findall("Rule")
    if len(rules) != 1:
        raise S3Error("MalformedXML", "OwnershipControls must have exactly one Rule")
    value = (rules[0].findtext("ObjectOwnership") or "").strip()
    return _mode(value, S3Error("MalformedXML", f"invalid ObjectOwnership {value!r}"))


def bucket_ownership(store: Store, req: Request, b: Bucket) -> Response:
    if req.method == "PUT":
        mode = parse(req.body)
        store.configure(b, "ownership", mode, mode.encode())
        return Response(200)
    if req.method == "GET":
        if not b.ownership:
            raise S3Error("OwnershipControlsNotFoundError", "The bucket ownership controls were not found",
                          f"/{b.name}", BucketName=b.name)
        body = s3_xml.document("OwnershipControls", f"<Rule>{el('ObjectOwnership', b.ownership)}</Rule>")
        return Response(200, [("Content-Type", "application/xml")], body)
    if req.method == "DELETE":
        store.configure(b, "ownership", "", None)
        return Response(204)
    raise S3Error("MethodNotAllowed", f"{req.method} is not allowed on ?ownershipControls")


def _not_supported(b: Bucket) -> S3Error:
    return S3Error("AccessControlListNotSupported", "The bucket does not allow ACLs", f"/{b.name}")


def check_upload_acl(b: Bucket, headers: dict[str, str]) -> None:
    """BucketOwnerEnforced: an upload may name no ACL but `bucket-owner-full-control`."""
    if not enforced(b):
        return
    named = [h for h in _ACL_HEADERS if h in headers]
    if named and (named != ["x-amz-acl"] or headers["x-amz-acl"].strip() != FULL_CONTROL):
        raise _not_supported(b)


def check_put_acl(b: Bucket, headers: dict[str, str], body: bytes) -> None:
    """BucketOwnerEnforced: PutBucketAcl and PutObjectAcl are refused (but the canned
    `bucket-owner-full-control`, which changes nothing there)."""
    if enforced(b) and (body.strip() or headers.get("x-amz-acl", "").strip() != FULL_CONTROL
                        or any(h in headers for h in _ACL_HEADERS[1:])):
        raise _not_supported(b)


def object_owner(b: Bucket, user: User, headers: dict[str, str]) -> str:
    """Who owns an object `user` writes with these request headers."""
    if enforced(b):
        return b.owner.id
    if b.ownership == "BucketOwnerPreferred" and headers.get("x-amz-acl", "").strip() == FULL_CONTROL:
        return b.owner.id
    return user.id


def upload_grants(b: Bucket, grants: list[list[str]]) -> list[list[str]]:
    """The grants an upload's object keeps: none where ACLs are disabled."""
    return [] if enforced(b) else grants


def check_expected(b: Bucket, headers: dict[str, str], header: str = "x-amz-expected-bucket-owner") -> None:
    expected = headers.get(header)
    if expected is not None and expected.strip() != b.owner.id:
        raise S3Error("AccessDenied", "Access Denied", f"/{b.name}")
