"""S3 bucket policies: the JSON document, its validation, and its evaluation as AWS and RGW do it.

A policy is `{"Version": "2012-10-17", "Statement": [...]}`; each statement has an optional `Sid`,
`Effect` (Allow or Deny), `Principal` or `NotPrincipal` (`"*"`, or `{"AWS": ARN or [ARNs]}` with
`arn:aws:iam::TENANT:user/UID`, `arn:aws:iam:::user/UID` for a user without tenant,
`arn:aws:iam::TENANT:root` for every user of a tenant, or `"*"`), `Action`/`NotAction` (`s3:GetObject`,
`s3:Get*`, `s3:*`, `*`; case-insensitive), `Resource`/`NotResource` (`arn:aws:s3:::bucket`,
`arn:aws:s3:::bucket/prefix*`, `*` and `?` wildcards; they must name this bucket) and an optional
`Condition` block: `{operator: {key: value or [values]}}`.

Evaluation (RGW's `verify_bucket_permission` and `eval_identity_or_session_policies`): a matching
Deny statement wins; else a matching Allow allows; else the policy says nothing and the ACL decides.
Within a statement the operators of its Condition are ANDed, and so are the keys of an operator;
the values of one key are ORed. A key the request does not carry makes a condition false, except
with a negated operator (StringNotEquals, NotIpAddress, ...) or an `...IfExists` operator, where it
is true; `Null` tests whether a key is absent. `ForAnyValue:`/`ForAllValues:` set operators apply to
multi-valued keys.

Condition operators: String{Equals,NotEquals,EqualsIgnoreCase,NotEqualsIgnoreCase,Like,NotLike},
Numeric{Equals,NotEquals,LessThan,LessThanEquals,GreaterThan,GreaterThanEquals},
Date{Equals,NotEquals,LessThan,LessThanEquals,GreaterThan,GreaterThanEquals}, Bool,
IpAddress, NotIpAddress (CIDR, IPv4 and IPv6), Null; Arn{Equals,Like,NotEquals,NotLike} as strings.
Resources and condition values may use policy variables (`${aws:username}`, any key below).
Keys the gateway fills: aws:SourceIp (the client socket's address), aws:SecureTransport,
aws:CurrentTime, aws:EpochTime, aws:username, aws:userid, aws:PrincipalType, aws:UserAgent,
aws:Referer, s3:prefix, s3:delimiter, s3:max-keys (ListBucket), s3:x-amz-acl, s3:VersionId,
s3:x-amz-content-sha256, s3:authType, s3:signatureversion, s3:x-amz-copy-source,
s3:x-amz-metadata-directive, and s3:ExistingObjectTag/<tag key> (the tags of the object version
an object request acts on).

A document that is not valid JSON, misses Effect/Principal/Action/Resource, names an unknown
action, operator or field, or a resource outside the bucket is refused with 400 MalformedPolicy.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import Literal

from services.ceph.rgw.s3_errors import S3Error

MAX_POLICY = 20 << 10  # S3: a bucket policy is at most 20 KiB
VERSIONS = ("2012-10-17", "2008-10-17")
Verdict = Literal["Allow", "Deny"] | None
Context = Mapping[str, Sequence[str]]  # condition key (lower-case) → its values in this request

# The S3 actions RGW's policy engine knows (rgw_iam_policy.h), by their canonical spelling.
ACTIONS = frozenset(f"s3:{a}" for a in (
    "AbortMultipartUpload", "CreateBucket", "DeleteBucket", "DeleteBucketPolicy", "DeleteBucketWebsite",
    "DeleteObject", "DeleteObjectTagging", "DeleteObjectVersion", "DeleteObjectVersionTagging",
    "DeleteReplicationConfiguration", "GetAccelerateConfiguration", "GetBucketAcl", "GetBucketCORS",
    "GetBucketLocation", "GetBucketLogging", "GetBucketNotification", "GetBucketObjectLockConfiguration",
    "GetBucketPolicy", "GetBucketPolicyStatus", "GetBucketPublicAccessBlock", "GetBucketRequestPayment",
    "GetBucketTagging", "GetBucketVersioning", "GetBucketWebsite", "GetLifecycleConfiguration", "GetObject",
    "GetObjectAcl", "GetObjectAttributes", "GetObjectLegalHold", "GetObjectRetention", "GetObjectTagging",
    "GetObjectTorrent", "GetObjectVersion", "GetObjectVersionAcl", "GetObjectVersionAttributes",
    "GetObjectVersionTagging", "GetObjectVersionTorrent", "GetReplicationConfiguration", "ListAllMyBuckets",
    "ListBucket", "ListBucketMultipartUploads", "ListBucketVersions", "ListMultipartUploadParts",
    "PutAccelerateConfiguration", "PutBucketAcl", "PutBucketCORS", "PutBucketLogging", "PutBucketNotification",
    "PutBucketObjectLockConfiguration", "PutBucketPolicy", "PutBucketPublicAccessBlock",
    "PutBucketRequestPayment", "PutBucketTagging", "PutBucketVersioning", "PutBucketWebsite",
    "PutLifecycleConfiguration", "PutObject", "PutObjectAcl", "PutObjectLegalHold", "PutObjectRetention",
    "PutObjectTagging", "PutObjectVersionAcl", "PutObjectVersionTagging", "PutReplicationConfiguration",
    "RestoreObject", "BypassGovernanceRetention", "GetBucketEncryption", "PutBucketEncryption",
    "GetBucketOwnershipControls", "PutBucketOwnershipControls",  # from Tentacle's RGW on
))
_ACTIONS_LOWER = {a.lower(): a for a in ACTIONS}

_STRING_OPS = {"stringequals", "stringnotequals", "stringequalsignorecase", "stringnotequalsignorecase",
               "stringlike", "stringnotlike", "arnequals", "arnlike", "arnnotequals", "arnnotlike"}
_NUMERIC_OPS = {"numericequals", "numericnotequals", "numericlessthan", "numericlessthanequals",
                "numericgreaterthan", "numericgreaterthanequals"}
_DATE_OPS = {"dateequals", "datenotequals", "datelessthan", "datelessthanequals", "dategreaterthan",
             "dategreaterthanequals"}
_OTHER_OPS = {"bool", "ipaddress", "notipaddress", "null", "binaryequals"}
OPERATORS = _STRING_OPS | _NUMERIC_OPS | _DATE_OPS | _OTHER_OPS
_NEGATED = {"stringnotequals", "stringnotequalsignorecase", "stringnotlike", "arnnotequals", "arnnotlike",
            "numericnotequals", "datenotequals", "notipaddress"}
_STATEMENT_FIELDS = {"Sid", "Effect", "Principal", "NotPrincipal", "Action", "NotAction", "Resource",
                     "NotResource", "Condition"}


def malformed(message: str) -> S3Error:
    return S3Error("MalformedPolicy", message)


@lru_cache(maxsize=4096)
def _glob(pattern: str, ignore_case: bool = False) -> re.Pattern[str]:
    """IAM wildcards: `*` any run of characters (across `/`), `?` one character."""
    body = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.compile(f"^{body}$", re.DOTALL | (re.IGNORECASE if ignore_case else 0))


def glob_match(pattern: str, value: str, ignore_case: bool = False) -> bool:
    if "*" not in pattern and "?" not in pattern:
        return pattern.lower() == value.lower() if ignore_case else pattern == value
    return _glob(pattern, ignore_case).match(value) is not None


@dataclass(frozen=True)
class Requester:
    """Who a request is from, as principals match it. `uid` is empty for an anonymous request."""

    uid: str
    tenant: str = ""

    @property
    def anonymous(self) -> bool:
        return not self.uid

    def arns(self) -> tuple[str, ...]:
        if self.anonymous:
            return ()
        return (f"arn:aws:iam::{self.tenant}:user/{self.uid}", f"arn:aws:iam::{self.tenant}:root")


def _strings(value: object, what: str) -> list[str]:
    items = value if isinstance(value, list) else [value]
    if not items or not all(isinstance(v, str) and v for v in items):
        raise malformed(f"{what} must be a non-empty string or list of strings")
    return list(items)


def _parse_principal(value: object, field: str) -> tuple[str, ...]:
    if value == "*":
        return ("*",)
    if not isinstance(value, dict) or not value:
        raise malformed(f"{field} must be \"*\" or {{\"AWS\": ...}}")
    out: list[str] = []
    for kind, ids in value.items():
        if kind != "AWS":
            raise malformed(f"{field} type {kind!r} is not supported: use AWS")
        for p in _strings(ids, f"{field}.AWS"):
            if p == "*":
                out.append("*")
            elif re.fullmatch(r"arn:aws:iam::[^:]*:(user/.+|root)", p):
                out.append(p)
            elif re.fullmatch(r"[0-9A-Za-z_.\-]+", p):  # an account (tenant) id alone, as AWS allows
                out.append(f"arn:aws:iam::{p}:root")
            else:
                raise malformed(f"invalid principal in policy: {p!r}")
    return tuple(out)


def _parse_actions(value: object, field: str) -> tuple[str, ...]:
    out = []
    for a in _strings(value, field):
        low = a.lower()
        if low == "*":
            out.append("*")
            continue
        if not low.startswith("s3:"):
            raise malformed(f"policy has an invalid action: {a!r} (only s3:* actions apply to buckets)")
        if "*" not in low and "?" not in low and low not in _ACTIONS_LOWER:
            raise malformed(f"policy has an invalid action: {a!r}")
        out.append(low)
    return tuple(out)


def _parse_resources(value: object, field: str, bucket: str, tenant: str) -> tuple[str, ...]:
    out = []
    for r in _strings(value, field):
        if r == "*":
            out.append("arn:aws:s3:::*")
            continue
        m = re.fullmatch(r"arn:aws:s3:([^:]*):([^:]*):(.+)", r)
        if m is None or m[1]:
            raise malformed(f"policy has an invalid resource: {r!r}")
        if m[2] and m[2] != tenant:
            raise malformed(f"policy has an invalid resource: {r!r} is in tenant {m[2]!r}, not {tenant!r}")
        name = m[3].split("/", 1)[0]
        if not glob_match(name, bucket):
            raise malformed(f"policy has an invalid resource: {r!r} is not in bucket {bucket!r}")
        out.append(f"arn:aws:s3:::{m[3]}")
    return tuple(out)


@dataclass(frozen=True)
class Condition:
    operator: str  # lower-case, without the set prefix or IfExists
    key: str  # lower-case
    values: tuple[str, ...]
    if_exists: bool = False
    qualifier: str = ""  # "", "foranyvalue" or "forallvalues"


def _date(text: str) -> float:
    t = text.strip()
    if re.fullmatch(r"\d+(\.\d+)?", t):
        return float(t)
    try:
        d = datetime.fromisoformat(t.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{text!r} is not an ISO 8601 date or epoch seconds") from None
    return (d if d.tzinfo else d.replace(tzinfo=UTC)).timestamp()


def _check_value(op: str, value: str) -> None:
    try:
        if op in ("ipaddress", "notipaddress"):
            ipaddress.ip_network(value, strict=False)
        elif op in _NUMERIC_OPS:
            float(value)
        elif op in _DATE_OPS:
            _date(value)
        elif op in ("bool", "null") and value.lower() not in ("true", "false"):
            raise ValueError(f"{value!r} is not true or false")
    except ValueError as e:
        raise malformed(f"invalid condition value for {op}: {e}") from None


def _parse_conditions(block: object) -> tuple[Condition, ...]:
    if not isinstance(block, dict):
        raise malformed("Condition must be an object of operators")
    out = []
    for raw_op, keys in block.items():
        qualifier, _, op = raw_op.lower().rpartition(":")
        if qualifier not in ("", "foranyvalue", "forallvalues"):
            raise malformed(f"unknown condition set operator {raw_op!r}")
        if_exists = op.endswith("ifexists") and op != "null"
        base = op.removesuffix("ifexists") if if_exists else op
        if base not in OPERATORS:
            raise malformed(f"unknown condition operator {raw_op!r}")
        if not isinstance(keys, dict) or not keys:
            raise malformed(f"condition {raw_op} must map keys to values")
        for key, value in keys.items():
            if not isinstance(key, str) or ":" not in key:
                raise malformed(f"condition key {key!r} is not like aws:SourceIp or s3:prefix")
            values = value if isinstance(value, list) else [value]
            texts = []
            for v in values:
                if isinstance(v, bool):
                    v = "true" if v else "false"
                if not isinstance(v, str | int | float):
                    raise malformed(f"condition value {v!r} of {key} must be a string, number or boolean")
                texts.append(str(v))
                _check_value(base, str(v))
            out.append(Condition(base, key.lower(), tuple(texts), if_exists, qualifier))
    return tuple(out)


@dataclass(frozen=True)
class Statement:
    sid: str
    effect: str
    principals: tuple[str, ...]
    not_principal: bool
    actions: tuple[str, ...]
    not_action: bool
    resources: tuple[str, ...]
    not_resource: bool
    conditions: tuple[Condition, ...]

    def applies(self, who: Requester, action: str, resource: str, ctx: Context) -> bool:
        hit = _principal_match(self.principals, who)
        if hit == self.not_principal:
            return False
        low = action.lower()
        hit = any(a == "*" or glob_match(a, low) for a in self.actions)
        if hit == self.not_action:
            return False
        hit = any(glob_match(substitute(r, ctx), resource) for r in self.resources)
        if hit == self.not_resource:
            return False
        return all(_condition(c, ctx) for c in self.conditions)


_VARIABLE = re.compile(r"\$\{([^}]*)\}")


def substitute(text: str, ctx: Context) -> str:
    """Policy variables in resources and condition values: `${aws:username}` becomes the request's value
    (a key the request lacks leaves the variable as it is, so it matches nothing). `${$}` is a dollar;
    `${*}` and `${?}` become `*` and `?`, which here still act as wildcards (AWS makes them literal)."""
    if "${" not in text:
        return text

    def one(m: re.Match[str]) -> str:
        name = m[1]
        if name in ("*", "?", "$"):
            return name
        values = ctx.get(name.lower())
        return values[0] if values else m[0]

    return _VARIABLE.sub(one, text)


def _principal_match(principals: tuple[str, ...], who: Requester) -> bool:
    if "*" in principals:
        return True
    return any(p in principals for p in who.arns())


def _compare(op: str, want: str, have: str) -> bool:
    if op in ("stringequals", "arnequals", "stringnotequals", "arnnotequals"):
        return want == have
    if op in ("stringequalsignorecase", "stringnotequalsignorecase"):
        return want.lower() == have.lower()
    if op in ("stringlike", "stringnotlike", "arnlike", "arnnotlike"):
        return glob_match(want, have)
    if op == "binaryequals":
        return want == have
    if op == "bool":
        return want.lower() == have.lower()
    if op in ("ipaddress", "notipaddress"):
        try:
            return ipaddress.ip_address(have.split("%")[0]) in ipaddress.ip_network(want, strict=False)
        except ValueError:
            return False
    try:
        if op in _NUMERIC_OPS:
            a, b = float(have), float(want)
        else:
            a, b = _date(have), _date(want)
    except ValueError:
        return False
    kind = op.removeprefix("numeric").removeprefix("date")
    return {"equals": a == b, "notequals": a == b, "lessthan": a < b, "lessthanequals": a <= b,
            "greaterthan": a > b, "greaterthanequals": a >= b}[kind]


def _condition(c: Condition, ctx: Context) -> bool:
    negated = c.operator in _NEGATED or c.operator in ("numericnotequals", "datenotequals")
    have = ctx.get(c.key)
    if c.operator == "null":
        absent = not have
        return any((v.lower() == "true") == absent for v in c.values)
    if not have:
        return c.if_exists or negated or c.qualifier == "forallvalues"

    def one(value: str) -> bool:
        hit = any(_compare(c.operator, substitute(want, ctx), value) for want in c.values)
        return not hit if negated else hit

    if c.qualifier == "forallvalues":
        return all(one(v) for v in have)
    if negated and not c.qualifier:
        return all(one(v) for v in have)
    return any(one(v) for v in have)


@dataclass(frozen=True)
class Policy:
    text: str  # the document as the owner sent it (GetBucketPolicy returns it)
    version: str
    statements: tuple[Statement, ...]

    def is_public(self) -> bool:
        """RGW's rgw::IAM::is_public: an Allow statement for any principal ("*", its conditions true for
        a request that carries no condition keys at all), or for everyone but some (NotPrincipal)."""
        for s in self.statements:
            if s.effect != "Allow":
                continue
            if s.not_principal:
                if "*" not in s.principals:
                    return True
            elif "*" in s.principals and all(_condition(c, {}) for c in s.conditions):
                return True
        return False

    def evaluate(self, who: Requester, action: str, resource: str, ctx: Context) -> Verdict:
        """Deny if a Deny statement applies, else Allow if an Allow statement does, else None."""
        allowed = False
        for s in self.statements:
            if s.applies(who, action, resource, ctx):
                if s.effect == "Deny":
                    return "Deny"
                allowed = True
        return "Allow" if allowed else None


def parse(text: str | bytes, bucket: str, tenant: str = "") -> Policy:
    """Validate a bucket policy for `bucket`; MalformedPolicy (400) says what is wrong."""
    raw = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
    if len(raw.encode()) > MAX_POLICY:
        raise malformed(f"policy exceeds the maximum allowed document size of {MAX_POLICY} bytes")
    try:
        doc = json.loads(raw)
    except ValueError as e:
        raise malformed(f"this policy is not valid JSON: {e}") from None
    if not isinstance(doc, dict):
        raise malformed("a policy must be a JSON object")
    extra = set(doc) - {"Version", "Id", "Statement"}
    if extra:
        raise malformed(f"unknown field(s) in policy: {', '.join(sorted(extra))}")
    version = doc.get("Version", "2008-10-17")
    if version not in VERSIONS:
        raise malformed(f"the policy Version must be 2012-10-17 (or 2008-10-17), got {version!r}")
    raw_statements = doc.get("Statement")
    if isinstance(raw_statements, dict):
        raw_statements = [raw_statements]
    if not isinstance(raw_statements, list) or not raw_statements:
        raise malformed("a policy needs a Statement")
    statements = []
    sids: set[str] = set()
    for st in raw_statements:
        if not isinstance(st, dict):
            raise malformed("each Statement must be a JSON object")
        unknown = set(st) - _STATEMENT_FIELDS
        if unknown:
            raise malformed(f"unknown field(s) in statement: {', '.join(sorted(unknown))}")
        sid = st.get("Sid", "")
        if not isinstance(sid, str) or (sid and sid in sids):
            raise malformed(f"statement ids (Sid) must be unique strings: {sid!r}")
        sids.add(sid)
        effect = st.get("Effect")
        if effect not in ("Allow", "Deny"):
            raise malformed(f"invalid effect: {effect!r} (Allow or Deny)")
        statements.append(Statement(
            sid, effect, *_pair(st, "Principal", lambda v, f: _parse_principal(v, f)),
            *_pair(st, "Action", lambda v, f: _parse_actions(v, f)),
            *_pair(st, "Resource", lambda v, f: _parse_resources(v, f, bucket, tenant)),
            _parse_conditions(st["Condition"]) if "Condition" in st else (),
        ))
    return Policy(raw, version, tuple(statements))


def _pair(st: dict[str, object], name: str, parse_one) -> tuple[tuple[str, ...], bool]:  # type: ignore[no-untyped-def]
    has, has_not = name in st, f"Not{name}" in st
    if has == has_not:
        raise malformed(f"each statement needs exactly one of {name} and Not{name}")
    field = name if has else f"Not{name}"
    return parse_one(st[field], field), has_not


# -- the gateway's operations as policy actions --------------------------------------------------


def action(method: str, bucket: str, key: str, query: Mapping[str, str]) -> str:
    """The IAM action an S3 request is evaluated as (RGW's `op_type` → `rgw::IAM::s3*`)."""
    m = method
    versioned = "versionId" in query
    if not bucket:
        return "s3:ListAllMyBuckets"
    if not key:
        if "policy" in query:
            return {"PUT": "s3:PutBucketPolicy", "DELETE": "s3:DeleteBucketPolicy"}.get(m, "s3:GetBucketPolicy")
        if "acl" in query:
            return "s3:PutBucketAcl" if m == "PUT" else "s3:GetBucketAcl"
        if "versioning" in query:
            return "s3:PutBucketVersioning" if m == "PUT" else "s3:GetBucketVersioning"
        if "lifecycle" in query:  # and no DeleteLifecycleConfiguration: a Put too
            return "s3:GetLifecycleConfiguration" if m == "GET" else "s3:PutLifecycleConfiguration"
        if "tagging" in query:  # S3 has no DeleteBucketTagging action: it is a PutBucketTagging
            return "s3:GetBucketTagging" if m == "GET" else "s3:PutBucketTagging"
        if "cors" in query:  # DeleteBucketCors is a PutBucketCORS, as in RGW
            return "s3:GetBucketCORS" if m == "GET" else "s3:PutBucketCORS"
        if "publicAccessBlock" in query:
            return "s3:GetBucketPublicAccessBlock" if m == "GET" else "s3:PutBucketPublicAccessBlock"
        if "encryption" in query:  # DeleteBucketEncryption is a PutBucketEncryption, as in S3
            return "s3:GetBucketEncryption" if m == "GET" else "s3:PutBucketEncryption"
        if "ownershipControls" in query:  # and so is DeleteBucketOwnershipControls
            return "s3:GetBucketOwnershipControls" if m == "GET" else "s3:PutBucketOwnershipControls"
        if "policyStatus" in query:
            return "s3:GetBucketPolicyStatus"
        if "object-lock" in query:
            return "s3:PutBucketObjectLockConfiguration" if m == "PUT" else "s3:GetBucketObjectLockConfiguration"
        if "versions" in query:
            return "s3:ListBucketVersions"
        if "uploads" in query:
            return "s3:ListBucketMultipartUploads"
        if "delete" in query:
            return "s3:DeleteObject"  # checked again per key
        return {"PUT": "s3:CreateBucket", "DELETE": "s3:DeleteBucket"}.get(m, "s3:ListBucket")
    if "acl" in query:
        if m == "PUT":
            return "s3:PutObjectVersionAcl" if versioned else "s3:PutObjectAcl"
        return "s3:GetObjectVersionAcl" if versioned else "s3:GetObjectAcl"
    if "tagging" in query:
        verb = {"PUT": "Put", "DELETE": "Delete"}.get(m, "Get")
        return f"s3:{verb}Object{'Version' if versioned else ''}Tagging"
    if "retention" in query:
        return "s3:PutObjectRetention" if m == "PUT" else "s3:GetObjectRetention"
    if "legal-hold" in query:
        return "s3:PutObjectLegalHold" if m == "PUT" else "s3:GetObjectLegalHold"
    if "uploadId" in query:
        return {"GET": "s3:ListMultipartUploadParts", "DELETE": "s3:AbortMultipartUpload"}.get(m, "s3:PutObject")
    if m in ("PUT", "POST"):
        return "s3:PutObject"
    if m == "DELETE":
        return "s3:DeleteObjectVersion" if versioned else "s3:DeleteObject"
    return "s3:GetObjectVersion" if versioned else "s3:GetObject"


def resource(bucket: str, key: str | None) -> str:
    return f"arn:aws:s3:::{bucket}" if key is None else f"arn:aws:s3:::{bucket}/{key}"
