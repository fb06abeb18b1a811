"""S3 access control lists on buckets and objects: canned ACLs, grants, and the AccessControlPolicy XML.

An ACL is its owner plus grants of READ, WRITE, READ_ACP, WRITE_ACP or FULL_CONTROL to a user
(canonical id: `uid`, or `tenant$uid`) or a group (AllUsers: everyone, anonymous included;
AuthenticatedUsers: any signed request). The owner always has full control, whatever the grants
say, as RGW lets the owner always read and rewrite its ACL. Canned ACLs (`x-amz-acl`) expand as S3
defines them:

| canned                    | grants besides the owner's FULL_CONTROL                       |
|---------------------------|---------------------------------------------------------------|
| private                   | none                                                          |
| public-read               | AllUsers READ                                                 |
| public-read-write         | AllUsers READ, WRITE                                          |
| authenticated-read        | AuthenticatedUsers READ                                       |
| bucket-owner-read         | the bucket's owner READ (objects; on a bucket: private)       |
| bucket-owner-full-control | the bucket's owner FULL_CONTROL (objects; on a bucket: private) |

What a permission allows (S3's ACL table): on a bucket READ lists it, WRITE creates, overwrites and
deletes its objects; on an object READ reads it; READ_ACP/WRITE_ACP read/replace the ACL.
Grants are kept as `[grantee, permission]` pairs (`id:<canonical id>`, `group:AllUsers`,
`group:AuthenticatedUsers`) beside the bucket record and in each object version's index entry.
"""

from __future__ import annotations

from collections.abc import Sequence
from xml.sax.saxutils import escape

from services.ceph.rgw import s3_xml
from services.ceph.rgw.s3_errors import S3Error

PERMISSIONS = ("FULL_CONTROL", "WRITE", "WRITE_ACP", "READ", "READ_ACP")
CANNED = ("private", "public-read", "public-read-write", "authenticated-read", "bucket-owner-read",
          "bucket-owner-full-control")
GROUP_URI = "http://acs.amazonaws.com/groups/global/"
ALL_USERS = "group:AllUsers"
AUTHENTICATED_USERS = "group:AuthenticatedUsers"
XSI = "http://www.w3.org/2001/XMLSchema-instance"
Grants = list[list[str]]  # [[grantee, permission], ...], JSON-friendly


def canned(name: str, bucket_owner: str = "", for_object: bool = True) -> Grants:
    """The grants (besides the owner's) of a canned ACL; InvalidArgument for an unknown one."""
    if name == "private":
        return []
    if name == "public-read":
        return [[ALL_USERS, "READ"]]
    if name == "public-read-write":
        return [[ALL_USERS, "READ"], [ALL_USERS, "WRITE"]]
    if name == "authenticated-read":
        return [[AUTHENTICATED_USERS, "READ"]]
    if name in ("bucket-owner-read", "bucket-owner-full-control"):
        if not for_object or not bucket_owner:
            return []
        return [[f"id:{bucket_owner}", "READ" if name == "bucket-owner-read" else "FULL_CONTROL"]]
    raise S3Error("InvalidArgument", f"{name!r} is not a canned ACL", ArgumentName="x-amz-acl", ArgumentValue=name)


_GRANT_HEADERS = {"x-amz-grant-read": "READ", "x-amz-grant-write": "WRITE", "x-amz-grant-read-acp": "READ_ACP",
                  "x-amz-grant-write-acp": "WRITE_ACP", "x-amz-grant-full-control": "FULL_CONTROL"}


def from_headers(headers: dict[str, str], bucket_owner: str = "", for_object: bool = True) -> Grants | None:
    """The ACL a create or PUT asks for (`x-amz-acl`, or `x-amz-grant-*: id="…", uri="…"`); None if none."""
    grant_headers = {h: v for h, v in headers.items() if h in _GRANT_HEADERS}
    if "x-amz-acl" in headers:
        if grant_headers:
            raise S3Error("InvalidRequest", "specifying both a canned ACL and x-amz-grant headers is not allowed")
        return canned(headers["x-amz-acl"].strip(), bucket_owner, for_object)
    if not grant_headers:
        return None
    grants: Grants = []
    for h, value in grant_headers.items():
        for item in value.split(","):
            kind, _, who = item.strip().partition("=")
            who = who.strip().strip('"')
            if kind.strip().lower() == "id" and who:
                grants.append([f"id:{who}", _GRANT_HEADERS[h]])
            elif kind.strip().lower() == "uri" and who.startswith(GROUP_URI):
                grants.append([_group(who), _GRANT_HEADERS[h]])
            else:
                raise S3Error("InvalidArgument", f"unsupported grantee {item.strip()!r} in {h}", ArgumentName=h)
    return grants


def _group(uri: str) -> str:
    name = uri.removeprefix(GROUP_URI)
    if name not in ("AllUsers", "AuthenticatedUsers"):
        raise S3Error("InvalidArgument", f"unsupported group {uri!r}")
    return f"group:{name}"


def allows(owner: str, grants: Sequence[Sequence[str]], requester: str, authenticated: bool, permission: str) -> bool:
    """Whether `requester` (a canonical id, "" when anonymous) holds `permission` under this ACL."""
    if authenticated and requester == owner:
        return True
    for grantee, perm in grants:
        if perm != permission and perm != "FULL_CONTROL":
            continue
        if grantee == ALL_USERS or (authenticated and (grantee == AUTHENTICATED_USERS
                                                       or grantee == f"id:{requester}")):
            return True
    return False


def is_public(grants: Sequence[Sequence[str]]) -> bool:
    """RGW's RGWAccessControlList::is_public: a grant to AllUsers or AuthenticatedUsers."""
    return any(g in (ALL_USERS, AUTHENTICATED_USERS) for g, _ in grants)


def to_xml(owner: s3_xml.Owner, grants: Sequence[Sequence[str]], display: dict[str, str]) -> bytes:
    """GetBucketAcl/GetObjectAcl: the owner's FULL_CONTROL first, then the other grants."""
    def grant(grantee: str, perm: str) -> str:
        if grantee.startswith("group:"):
            g = f'<Grantee xmlns:xsi="{XSI}" xsi:type="Group"><URI>{GROUP_URI}{grantee[6:]}</URI></Grantee>'
        else:
            uid = grantee.removeprefix("id:")
            g = (f'<Grantee xmlns:xsi="{XSI}" xsi:type="CanonicalUser"><ID>{escape(uid)}</ID>'
                 f"<DisplayName>{escape(display.get(uid, uid))}</DisplayName></Grantee>")
        return f"<Grant>{g}<Permission>{perm}</Permission></Grant>"

    items = [grant(f"id:{owner.id}", "FULL_CONTROL")]
    items += [grant(g, p) for g, p in grants if not (g == f"id:{owner.id}" and p == "FULL_CONTROL")]
    return s3_xml.document("AccessControlPolicy", f"{owner.xml()}<AccessControlList>{''.join(items)}"
                           "</AccessControlList>")


def from_xml(body: bytes, owner: str) -> Grants:
    """PUT ?acl with an AccessControlPolicy body; the owner in it must be the resource's owner."""
    doc = s3_xml.parse(body, "AccessControlPolicy")
    sent_owner = (doc.findtext("Owner/ID") or "").strip()
    if sent_owner and sent_owner != owner:
        raise S3Error("AccessDenied", "the Owner in an ACL must be the resource's owner")
    grants: Grants = []
    for g in doc.iter("Grant"):
        perm = (g.findtext("Permission") or "").strip()
        if perm not in PERMISSIONS:
            raise S3Error("MalformedACLError", f"unknown permission {perm!r}")
        uid, uri = (g.findtext("Grantee/ID") or "").strip(), (g.findtext("Grantee/URI") or "").strip()
        if uid:
            if uid == owner and perm == "FULL_CONTROL":
                continue  # implied
            grants.append([f"id:{uid}", perm])
        elif uri:
            try:
                grants.append([_group(uri), perm])
            except S3Error:
                raise S3Error("MalformedACLError", f"unsupported grantee group {uri!r}") from None
        else:
            raise S3Error("MalformedACLError", "a Grant needs a Grantee with an ID or a URI")
    return grants


def from_request(headers: dict[str, str], body: bytes, owner: str, bucket_owner: str, for_object: bool) -> Grants:
    """PUT ?acl: canned or grant headers, else an XML body."""
    grants = from_headers(headers, bucket_owner, for_object)
    if grants is not None:
        if body.strip():
            raise S3Error("UnexpectedContent", "this request does not support content when an ACL header is set")
        return grants
    if not body.strip():
        raise S3Error("MissingSecurityHeader", "your request was missing a required header: x-amz-acl or an "
                      "AccessControlPolicy body")
    return from_xml(body, owner)
