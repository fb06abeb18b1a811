"""Who may do what: every S3 request is authorized here, after `auth` has said who sent it.

As RGW (`verify_bucket_permission`, `verify_object_permission`): the bucket policy is evaluated
first — an explicit Deny refuses, an Allow grants — and when it says nothing the ACLs decide: the
bucket's for listing and for writing objects into it, the object version's for reading it and its
ACL, the owner alone for the bucket's configuration (versioning, policy, deletion). Anonymous
requests get only what a policy statement with Principal "*" or an AllUsers grant gives them.
An anonymous request naming a bucket that does not exist is refused the same way (403, where RGW
says 404 NoSuchBucket), so it learns nothing of which buckets exist. One exception, as AWS makes it
for the account root: a bucket's owner can always read, replace and delete the bucket policy, so a
Deny-all policy cannot lock the bucket for good.

Also here: the ?policy and ?acl sub-resources of buckets and objects, and the request context
policies' conditions read (aws:SourceIp is the client socket's address, so the twin's per-host
addresses make it meaningful).
"""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime

from services.ceph.rgw import acl, ownership, policy, public_access, s3_xml
from services.ceph.rgw.bucket_index import Bucket, ObjectEntry
from services.ceph.rgw.s3_errors import S3Error
from services.ceph.rgw.store import Store
from services.ceph.rgw.users import ANONYMOUS, User
from services.ceph.rgw.wire import Request, Response

OWNER_ALWAYS = frozenset({"s3:GetBucketPolicy", "s3:PutBucketPolicy", "s3:DeleteBucketPolicy"})
# The permission an ACL must grant for an action: on the bucket, or on the object version.
BUCKET_PERMISSION = {
    "s3:ListBucket": "READ", "s3:ListBucketVersions": "READ", "s3:ListBucketMultipartUploads": "READ",
    "s3:ListMultipartUploadParts": "READ",
    "s3:PutObject": "WRITE", "s3:DeleteObject": "WRITE", "s3:DeleteObjectVersion": "WRITE",
    "s3:AbortMultipartUpload": "WRITE",
    "s3:GetBucketAcl": "READ_ACP", "s3:PutBucketAcl": "WRITE_ACP",
}
OBJECT_PERMISSION = {
    "s3:GetObject": "READ", "s3:GetObjectVersion": "READ", "s3:GetObjectAcl": "READ_ACP",
    "s3:GetObjectVersionAcl": "READ_ACP", "s3:PutObjectAcl": "WRITE_ACP", "s3:PutObjectVersionAcl": "WRITE_ACP",
    "s3:GetObjectTagging": "READ", "s3:GetObjectVersionTagging": "READ",
    "s3:GetObjectAttributes": "READ", "s3:GetObjectVersionAttributes": "READ",
    "s3:GetObjectRetention": "READ", "s3:GetObjectLegalHold": "READ",  # RGW's op_to_perm
}
_LIST_ACTIONS = ("s3:ListBucket", "s3:ListBucketVersions")
# Actions on an existing object version: a missing one is a 404 or a 403 as the bucket's listing
# permission says, and its tags are s3:ExistingObjectTag/<key> for the policy.
_OBJECT_READS = frozenset({*OBJECT_PERMISSION, "s3:PutObjectTagging", "s3:PutObjectVersionTagging",
                           "s3:DeleteObjectTagging", "s3:DeleteObjectVersionTagging"})
_current = threading.local()  # the request this thread serves, and its query: what policy conditions read


def serving(req: Request, query: dict[str, str]) -> None:
    """Name the request this thread serves from now on (the gateway does, before it authorizes it)."""
    _current.request, _current.query = req, query


def denied(resource: str) -> S3Error:
    return S3Error("AccessDenied", "Access Denied", resource)


def authorize(store: Store, user: User, action: str, name: str, key: str | None = None,
              version_id: str | None = None) -> Bucket | None:
    """Refuse (403 AccessDenied) unless `user` may do `action` on bucket `name` (and `key`);
    returns the bucket (NoSuchBucket if it does not exist), None for service-level actions."""
    anonymous = user is ANONYMOUS
    if action in ("s3:ListAllMyBuckets", "s3:CreateBucket"):
        if anonymous:
            raise denied(f"/{name}" if name else "/")
        return None
    where = f"/{name}" + (f"/{key}" if key is not None else "")
    try:
        b = store.bucket(user, name)
    except S3Error:
        if anonymous:  # an anonymous caller learns nothing of which buckets exist
            raise denied(where) from None
        raise
    owner = not anonymous and b.owner.id == user.id
    obj = None
    if key is not None and action in _OBJECT_READS:
        with store.lock:
            obj = b.latest(key) if version_id is None else b.version(key, version_id)
        if obj is None or obj.delete_marker:
            _may_learn_missing(store, user, b, owner, action, where)
            return b  # the operation answers 404
    if b.policy is not None:
        who = policy.Requester("" if anonymous else user.uid, user.tenant)
        verdict = b.policy.evaluate(who, action, policy.resource(b.name, key), context(store, user, action, obj))
        if verdict == "Deny" and not (owner and action in OWNER_ALWAYS):
            raise denied(where)
        if verdict == "Allow" and not _restricted(b, user):
            return b
    if _acl_allows(store, user, b, action, key, version_id):
        return b
    raise denied(where)


def _restricted(b: Bucket, user: User) -> bool:
    """RestrictPublicBuckets: a public policy gives nothing to anyone outside the owner's account (tenant)."""
    if not public_access.setting(b, "RestrictPublicBuckets") or b.policy is None or not b.policy.is_public():
        return False
    return user is ANONYMOUS or user.tenant != b.owner.tenant


def _may_learn_missing(store: Store, user: User, b: Bucket, owner: bool, action: str, where: str) -> None:
    """RGW's read_obj_policy for an object (or version) that does not exist: who may list the bucket
    learns that (404), anyone else gets 403. The bucket policy's s3:ListBucket on the bucket decides
    first, whatever it says of the object's own action; then the bucket ACL's READ."""
    if owner:
        return
    anonymous = user is ANONYMOUS
    if b.policy is not None:
        who = policy.Requester("" if anonymous else user.uid, user.tenant)
        verdict = b.policy.evaluate(who, "s3:ListBucket", policy.resource(b.name, None),
                                    context(store, user, action))
        if verdict == "Deny":
            raise denied(where)
        if verdict == "Allow" and not _restricted(b, user):
            return
    grants = public_access.effective_grants(b, b.acl)
    if not acl.allows(b.owner.id, grants, "" if anonymous else user.id, not anonymous, "READ"):
        raise denied(where)


def _acl_allows(store: Store, user: User, b: Bucket, action: str, key: str | None, version_id: str | None) -> bool:
    anonymous = user is ANONYMOUS
    requester = "" if anonymous else user.id
    perm = OBJECT_PERMISSION.get(action)
    if perm is not None and key is not None:
        with store.lock:
            e = b.latest(key) if version_id is None else b.version(key, version_id)
        if e is not None and not e.delete_marker:
            if ownership.enforced(b):  # ACLs disabled: the bucket owner owns it, and no grant counts
                return acl.allows(b.owner.id, [], requester, not anonymous, perm)
            return acl.allows(e.owner, public_access.effective_grants(b, e.acl), requester, not anonymous, perm)
        return False  # gone since authorize looked: refused, as a policy would not have said otherwise
    perm = BUCKET_PERMISSION.get(action)
    if perm is not None:
        return acl.allows(b.owner.id, public_access.effective_grants(b, b.acl), requester, not anonymous, perm)
    return not anonymous and b.owner.id == user.id


def context(store: Store, user: User, action: str, obj: ObjectEntry | None = None) -> dict[str, list[str]]:
    """The condition keys of the request being served (lower-case names); with the object version it
    acts on, that version's tags as s3:ExistingObjectTag/<key> (as RGW's rgw_iam_add_objtags)."""
    req: Request | None = getattr(_current, "request", None)
    now = store.wall()
    ctx: dict[str, list[str]] = {
        "aws:currenttime": [datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")],
        "aws:epochtime": [str(int(now))],
        "aws:principaltype": ["Anonymous" if user is ANONYMOUS else "User"],
    }
    if user is not ANONYMOUS:
        ctx["aws:username"] = [user.uid]
        ctx["aws:userid"] = [user.id]
    if obj is not None:
        ctx.update({f"s3:existingobjecttag/{k.lower()}": [v] for k, v in obj.tags.items()})
    if req is None:
        return ctx
    h, q = req.headers, _current.query
    ctx["aws:securetransport"] = ["true" if req.secure else "false"]
    if req.remote:
        ctx["aws:sourceip"] = [req.remote]
    for header, k in (("user-agent", "aws:useragent"), ("referer", "aws:referer"), ("x-amz-acl", "s3:x-amz-acl"),
                      ("x-amz-content-sha256", "s3:x-amz-content-sha256"),
                      ("x-amz-copy-source", "s3:x-amz-copy-source"),
                      ("x-amz-metadata-directive", "s3:x-amz-metadata-directive"),
                      ("x-amz-server-side-encryption", "s3:x-amz-server-side-encryption"),
                      ("x-amz-storage-class", "s3:x-amz-storage-class")):
        if header in h:
            ctx[k] = [h[header]]
    if "versionId" in q:
        ctx["s3:versionid"] = [q["versionId"]]
    if action in _LIST_ACTIONS:
        ctx["s3:prefix"] = [q.get("prefix", "")]
        for name in ("delimiter", "max-keys"):
            if name in q:
                ctx[f"s3:{name}"] = [q[name]]
    auth = h.get("authorization", "")
    raw_q = req.raw_query
    if auth:
        ctx["s3:authtype"] = ["REST-HEADER"]
        ctx["s3:signatureversion"] = ["AWS4-HMAC-SHA256" if auth.startswith("AWS4") else "AWS"]
    elif "X-Amz-Signature=" in raw_q or "Signature=" in raw_q:
        ctx["s3:authtype"] = ["REST-QUERY-STRING"]
        ctx["s3:signatureversion"] = ["AWS4-HMAC-SHA256" if "X-Amz-Signature=" in raw_q else "AWS"]
    return ctx


# -- ?policy -------------------------------------------------------------------------------------


def bucket_policy(store: Store, req: Request, b: Bucket) -> Response:
    if req.method == "PUT":
        doc = policy.parse(req.body, b.name, b.tenant)  # MalformedPolicy before anything changes
        if public_access.setting(b, "BlockPublicPolicy") and doc.is_public():
            raise S3Error("AccessDenied", "Access Denied: the bucket's PublicAccessBlock blocks public policies",
                          f"/{b.name}")
        store.configure(b, "policy", doc, doc.text.encode())
        return Response(204)
    if req.method == "GET":
        if b.policy is None:
            raise S3Error("NoSuchBucketPolicy", "the bucket policy does not exist", f"/{b.name}", BucketName=b.name)
        return Response(200, [("Content-Type", "application/json")], b.policy.text.encode())
    if req.method == "DELETE":
        store.configure(b, "policy", None, None)
        return Response(204)
    raise S3Error("MethodNotAllowed", f"{req.method} is not allowed on ?policy")


# -- ?acl ----------------------------------------------------------------------------------------


def _display(store: Store, ids: list[str]) -> dict[str, str]:
    return {u.id: u.display_name for u in store.users.all() if u.id in ids}


def bucket_acl(store: Store, req: Request, b: Bucket) -> Response:
    if req.method == "PUT":
        ownership.check_put_acl(b, req.headers, req.body)
        grants = acl.from_request(req.headers, req.body, b.owner.id, b.owner.id, for_object=False)
        public_access.check_acl(b, grants)
        store.configure(b, "acl", grants, json.dumps(grants).encode())
        return Response(200)
    if req.method == "GET":
        ids = [g.removeprefix("id:") for g, _ in b.acl]
        body = acl.to_xml(s3_xml.Owner(b.owner.id, b.owner.display_name), b.acl, _display(store, ids))
        return Response(200, [("Content-Type", "application/xml")], body)
    raise S3Error("MethodNotAllowed", f"{req.method} is not allowed on ?acl")


def object_acl(store: Store, req: Request, b: Bucket, key: str, version_id: str | None) -> Response:
    e: ObjectEntry = store.lookup(b, key, version_id)
    vh = [("x-amz-version-id", e.version_id)] if b.versioning else []
    if req.method == "PUT":
        ownership.check_put_acl(b, req.headers, req.body)
        grants = ownership.upload_grants(b, acl.from_request(req.headers, req.body, e.owner, b.owner.id,
                                                             for_object=True))
        public_access.check_acl(b, grants)
        store.update(b, e, acl=grants)  # the index entry first: a refused write changes nothing
        return Response(200, vh)
    if req.method == "GET":
        ids = [e.owner, *(g.removeprefix("id:") for g, _ in e.acl)]
        names = _display(store, ids)
        body = acl.to_xml(s3_xml.Owner(e.owner, names.get(e.owner, e.owner)), e.acl, names)
        return Response(200, [("Content-Type", "application/xml"), *vh], body)
    raise S3Error("MethodNotAllowed", f"{req.method} is not allowed on ?acl")

