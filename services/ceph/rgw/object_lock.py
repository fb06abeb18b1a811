"""S3 Object Lock as RGW (Squid, 19.2) serves it: a bucket's `?object-lock` configuration, an object
version's `?retention` and `?legal-hold`, the `x-amz-object-lock-*` headers of uploads and GET/HEAD,
and the deletes a lock refuses.

Where RGW does it (src/rgw/):
- rgw_rest_s3.cc, RGWCreateBucket_ObjStore_S3::get_params: `x-amz-bucket-object-lock-enabled: true`
  (or false; anything else is 400 InvalidArgument); RGWCreateBucket::execute then creates the bucket
  versioned and lock-enabled. Object lock is never disabled, and on Squid 19.2.0 never enabled later
  (ceph PR #61946, 2025, lets a PutObjectLockConfiguration enable it on a versioning-enabled bucket;
  not modelled).
- rgw_op.cc, RGWPutBucketObjectLock::execute: on a bucket created without it, 409 InvalidBucketState;
  an XML document that does not decode is 400 MalformedXML; a rule whose Days or Years is not > 0 is
  400 InvalidRetentionPeriod. RGWGetBucketObjectLock: 404 ObjectLockConfigurationNotFoundError on a
  bucket without object lock. RGWSetBucketVersioning: anything but Enabled there is 409 InvalidBucketState.
- rgw_object_lock.cc: the documents' decoding. ObjectLockEnabled must be "Enabled"; a Rule needs a
  DefaultRetention with Mode GOVERNANCE or COMPLIANCE (upper case) and exactly one of Days and
  Years; a Retention needs Mode and an ISO 8601 RetainUntilDate; a LegalHold a Status ON or OFF.
  `RGWObjectLock::get_lock_until_date`: the default retention runs from the version's time for
  `days` days or `years` std::chrono::years (365.2425 days each).
- rgw_op.cc, RGWPutObjRetention / RGWGetObjRetention / RGWPutObjLegalHold / RGWGetObjLegalHold: on a
  bucket without object lock, 400 InvalidRequest; a retain-until date in the past, 400
  InvalidArgument; a version with none, 404 ObjectLockConfigurationNotFoundError (RGW's code for
  ERR_NO_SUCH_OBJECT_LOCK_CONFIGURATION, where AWS says NoSuchObjectLockConfiguration). A new
  retention may not shorten the one there, nor change its mode, unless the old one is GOVERNANCE,
  the request says `x-amz-bypass-governance-retention: true` and the requester has
  s3:BypassGovernanceRetention; COMPLIANCE never goes back to GOVERNANCE. 403 AccessDenied otherwise.
- rgw_rest_s3.cc, RGWPutObj_ObjStore_S3::get_params (and the multipart initiation's, and since ceph PR
  #42387 the copy's, whose source retention is not carried to the copy): mode and
  retain-until date come together, the date in the future, the legal hold ON or OFF (400
  InvalidArgument otherwise); on a bucket without object lock, 400 InvalidRequest. A version written
  without a retention gets the bucket's default one, from the time it is written (rgw_rados.cc,
  RGWRados::Object::Write::_do_write_meta: a multipart object's from its completion).
  RGWGetObj_ObjStore_S3 sends them back.
- rgw_op.cc, verify_object_lock (RGWDeleteObj, RGWDeleteMultiObj): deleting a version (a versionId
  named) that is retained until a later date, or under a legal hold ON, is 403 AccessDenied; a
  GOVERNANCE retention gives way to the bypass header with the permission, a legal hold never.
  A delete naming no version only adds a delete marker, which no lock prevents.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, date, datetime

from services.ceph.rgw import authz, s3_xml
from services.ceph.rgw.bucket_index import Bucket, ObjectEntry, ObjectLock
from services.ceph.rgw.s3_errors import S3Error
from services.ceph.rgw.s3_xml import element as el
from services.ceph.rgw.store import Store
from services.ceph.rgw.users import User
from services.ceph.rgw.wire import Request, Response

MODES = ("GOVERNANCE", "COMPLIANCE")
DAY = 86400.0
YEAR = 365.2425 * DAY  # std::chrono::years, what RGW adds for a rule's Years
_ISO_RE = re.compile(r"(?P<y>\d{4})(?:-(?P<mo>\d\d)(?:-(?P<d>\d\d)(?:T(?P<h>\d\d)(?::(?P<mi>\d\d)(?::(?P<s>\d\d)"
                     r"(?:\.(?P<n>\d{1,9}))?)?)?Z)?)?)?")
_TRUE = ("true", "1", "yes", "on")  # RGW's get_bool for x-amz-bypass-governance-retention


def _malformed(why: str) -> S3Error:
    return S3Error("MalformedXML", f"the XML you provided was not well-formed or did not validate against our "
                   f"published schema: {why}")


def parse_date(text: str) -> float | None:
    """ceph::from_iso_8601 (src/common/iso_8601.cc), UTC epoch seconds; None when it is not one. A date
    may stop after the year, month or day (whitespace ends it too); a time ends in Z after the hour,
    minute, second or 1 to 9 digits of a fraction; no year before 1970. Out-of-range fields roll
    over as timegm rolls them (February 30 is March 2)."""
    m = _ISO_RE.fullmatch(re.split(r"\s", text, maxsplit=1)[0])
    if m is None or int(m["y"]) < 1970:
        return None
    month = int(m["mo"] or 1) - 1
    year, month = int(m["y"]) + month // 12, month % 12
    days = (date(year, month + 1, 1) - date(1970, 1, 1)).days + int(m["d"] or 1) - 1
    seconds = ((days * 24 + int(m["h"] or 0)) * 60 + int(m["mi"] or 0)) * 60 + int(m["s"] or 0)
    return seconds + int((m["n"] or "0").ljust(9, "0")) / 1e9


def format_date(ts: float) -> str:
    """ceph::to_iso_8601, as RGW sends a retain-until date: nanoseconds, then Z."""
    us = round(ts * 1e6)
    sec, frac = divmod(us, 1_000_000)
    return datetime.fromtimestamp(sec, UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{frac * 1000:09d}Z"


def _mode(value: str | None) -> str:
    mode = (value or "").strip()
    if mode not in MODES:
        raise _malformed(f"bad Mode {mode!r}: GOVERNANCE or COMPLIANCE")
    return mode


def _int(text: str | None, name: str) -> int | None:
    if text is None:
        return None
    try:
        return int(text.strip())
    except ValueError:
        raise _malformed(f"{name} must be an integer") from None


# -- the bucket's configuration --------------------------------------------------------------


def enabled_at_creation(headers: dict[str, str]) -> bool:
    """CreateBucket's `x-amz-bucket-object-lock-enabled`: true or false, any case."""
    value = headers.get("x-amz-bucket-object-lock-enabled", "false").strip().lower()
    if value not in ("true", "false"):
        raise S3Error("InvalidArgument", "x-amz-bucket-object-lock-enabled must be true or false",
                      ArgumentName="x-amz-bucket-object-lock-enabled", ArgumentValue=value)
    return value == "true"


def parse_config(body: bytes) -> ObjectLock:
    doc = s3_xml.parse(body, "ObjectLockConfiguration")
    if (doc.findtext("ObjectLockEnabled") or "").strip() != "Enabled":
        raise _malformed("ObjectLockEnabled must be Enabled")
    rule = doc.find("Rule")
    if rule is None:
        return ObjectLock()
    default = rule.find("DefaultRetention")
    if default is None:
        raise _malformed("a Rule needs a DefaultRetention")
    mode = _mode(default.findtext("Mode"))
    days, years = _int(default.findtext("Days"), "Days"), _int(default.findtext("Years"), "Years")
    if (days is None) == (years is None):
        raise _malformed("either Days or Years must be specified, but not both")
    if (days or 0) <= 0 and (years or 0) <= 0:
        raise S3Error("InvalidRetentionPeriod", "retention period must be a positive integer value")
    return ObjectLock(mode, days or 0, years or 0)


def config_xml(lock: ObjectLock) -> bytes:
    inner = el("ObjectLockEnabled", "Enabled")
    if lock.mode:
        period = el("Days", lock.days) if lock.days > 0 else el("Years", lock.years)
        inner += f"<Rule><DefaultRetention>{el('Mode', lock.mode)}{period}</DefaultRetention></Rule>"
    return s3_xml.document("ObjectLockConfiguration", inner)


def to_json(lock: ObjectLock) -> bytes:
    return json.dumps(lock.__dict__).encode()


def from_json(record: bytes) -> ObjectLock:
    return ObjectLock(**json.loads(record))


def bucket_object_lock(store: Store, req: Request, b: Bucket) -> Response:
    """`?object-lock` on a bucket: PUT sets its default retention (or none), GET returns it."""
    if req.method == "PUT":
        if b.object_lock is None:
            raise S3Error("InvalidBucketState", "object lock configuration can't be set if bucket object lock "
                          "not enabled", f"/{b.name}", BucketName=b.name)
        lock = parse_config(req.body)
        store.configure(b, "object_lock", lock, to_json(lock))
        return Response(200)
    if req.method == "GET":
        if b.object_lock is None:
            raise S3Error("ObjectLockConfigurationNotFoundError", "Object Lock configuration does not exist for "
                          "this bucket", f"/{b.name}", BucketName=b.name)
        return Response(200, [("Content-Type", "application/xml")], config_xml(b.object_lock))
    raise S3Error("MethodNotAllowed", f"{req.method} is not allowed on ?object-lock")


def check_versioning(b: Bucket, status: str) -> None:
    """PutBucketVersioning: a bucket with object lock stays Enabled."""
    if b.object_lock is not None and status != "Enabled":
        raise S3Error("InvalidBucketState", "bucket versioning cannot be disabled on buckets with object lock "
                      "enabled", f"/{b.name}", BucketName=b.name)


# -- a new version's lock --------------------------------------------------------------------


def from_headers(b: Bucket, headers: dict[str, str], now: float) -> dict[str, object]:
    """The lock a PutObject, CopyObject or CreateMultipartUpload asks for in its headers, as
    ObjectEntry fields (only those it names); refused before anything is written."""
    mode, date = headers.get("x-amz-object-lock-mode"), headers.get("x-amz-object-lock-retain-until-date")
    hold = headers.get("x-amz-object-lock-legal-hold")
    lock: dict[str, object] = {}
    if mode is not None and date is not None:
        until = parse_date(date)
        if until is None or int(until) <= int(now):
            raise S3Error("InvalidArgument", "invalid x-amz-object-lock-retain-until-date value",
                          ArgumentName="x-amz-object-lock-retain-until-date", ArgumentValue=date)
        if mode not in MODES:
            raise S3Error("InvalidArgument", "invalid x-amz-object-lock-mode value",
                          ArgumentName="x-amz-object-lock-mode", ArgumentValue=mode)
        lock.update(lock_mode=mode, lock_until=until)
    elif mode is not None or date is not None:
        raise S3Error("InvalidArgument", "need both x-amz-object-lock-mode and x-amz-object-lock-retain-until-date")
    if hold is not None:
        if hold not in ("ON", "OFF"):
            raise S3Error("InvalidArgument", "invalid x-amz-object-lock-legal-hold value",
                          ArgumentName="x-amz-object-lock-legal-hold", ArgumentValue=hold)
        lock["legal_hold"] = hold
    if lock and b.object_lock is None:
        raise S3Error("InvalidRequest", "object retention or legal hold can't be set if bucket object lock not "
                      "configured")
    return lock


def with_default(b: Bucket, lock: dict[str, object], since: float) -> dict[str, object]:
    """`lock`, or with the bucket's default retention (from `since`) when it names none."""
    rule = b.object_lock
    if "lock_mode" in lock or rule is None or not rule.mode:
        return lock
    period = rule.days * DAY if rule.days > 0 else rule.years * YEAR
    return {**lock, "lock_mode": rule.mode, "lock_until": since + period}


def response_headers(store: Store, user: User, b: Bucket, e: ObjectEntry) -> list[tuple[str, str]]:
    """What GET and HEAD say of a version's lock: to a requester who may read its retention and its
    legal hold (RGWGetObj::verify_permission looks, in a bucket with object lock)."""
    if b.object_lock is None:
        return []
    hdrs = []
    if e.lock_mode and e.lock_until is not None and _may(store, user, b, e, "s3:GetObjectRetention"):
        hdrs += [("x-amz-object-lock-mode", e.lock_mode),
                 ("x-amz-object-lock-retain-until-date", format_date(e.lock_until))]
    if e.legal_hold and _may(store, user, b, e, "s3:GetObjectLegalHold"):
        hdrs.append(("x-amz-object-lock-legal-hold", e.legal_hold))
    return hdrs


def _may(store: Store, user: User, b: Bucket, e: ObjectEntry, action: str) -> bool:
    try:
        authz.authorize(store, user, action, b.name, e.key, e.version_id)
    except S3Error:
        return False
    return True


# -- retention and legal hold of a version ---------------------------------------------------


def _bypass(store: Store, user: User, b: Bucket, key: str, vid: str | None, headers: dict[str, str]) -> bool:
    """The request asks to bypass GOVERNANCE and its requester may (s3:BypassGovernanceRetention: a
    policy's Allow, or the bucket owner)."""
    if headers.get("x-amz-bypass-governance-retention", "").strip().lower() not in _TRUE:
        return False
    e = store.lookup(b, key, vid)
    return _may(store, user, b, e, "s3:BypassGovernanceRetention")


def _not_configured(what: str) -> S3Error:
    return S3Error("InvalidRequest", what)


def parse_retention(body: bytes) -> tuple[str, float]:
    doc = s3_xml.parse(body, "Retention")
    mode = _mode(doc.findtext("Mode"))
    until = parse_date(doc.findtext("RetainUntilDate") or "")
    if until is None:
        raise _malformed("invalid RetainUntilDate value")
    return mode, until


def check_transition(e: ObjectEntry, mode: str, until: float, bypass: bool) -> None:
    """rgw_check_object_retention_transition: what may replace the retention a version has."""
    if not e.lock_mode or e.lock_until is None:
        return
    if int(until) < int(e.lock_until):
        if e.lock_mode == "GOVERNANCE" and bypass:
            return
        raise S3Error("AccessDenied", "proposed retain-until date shortens an existing retention period and "
                      "governance bypass check failed")
    if e.lock_mode == mode:
        return
    if mode == "GOVERNANCE":
        raise S3Error("AccessDenied", "can't change retention mode from COMPLIANCE to GOVERNANCE")
    if not bypass:
        raise S3Error("AccessDenied", "can't change retention mode from GOVERNANCE without governance bypass")


def object_retention(store: Store, req: Request, user: User, b: Bucket, key: str, vid: str | None) -> Response:
    """`?retention` on an object version: PUT sets it, GET returns it."""
    if req.method == "PUT":
        if b.object_lock is None:
            raise _not_configured("object retention can't be set if bucket object lock not configured")
        mode, until = parse_retention(req.body)
        if int(until) < int(store.wall()):
            raise S3Error("InvalidArgument", "the retain-until date must be in the future")
        e = store.lookup(b, key, vid)
        check_transition(e, mode, until, _bypass(store, user, b, key, vid, req.headers))
        store.update(b, e, lock_mode=mode, lock_until=until)  # the index entry first: a refused write changes nothing
        return Response(200)
    if req.method == "GET":
        if b.object_lock is None:
            raise _not_configured("bucket object lock not configured")
        e = store.lookup(b, key, vid)
        if not e.lock_mode or e.lock_until is None:
            raise _no_lock(b, key)
        body = s3_xml.document("Retention", el("Mode", e.lock_mode) + el("RetainUntilDate", format_date(e.lock_until)))
        return Response(200, [("Content-Type", "application/xml")], body)
    raise S3Error("MethodNotAllowed", f"{req.method} is not allowed on ?retention")


def object_legal_hold(store: Store, req: Request, b: Bucket, key: str, vid: str | None) -> Response:
    """`?legal-hold` on an object version: PUT sets it ON or OFF, GET returns it."""
    if req.method == "PUT":
        if b.object_lock is None:
            raise _not_configured("object legal hold can't be set if bucket object lock not enabled")
        doc = s3_xml.parse(req.body, "LegalHold")
        status = (doc.findtext("Status") or "").strip()
        if status not in ("ON", "OFF"):
            raise _malformed("bad status in legal hold")
        store.update(b, store.lookup(b, key, vid), legal_hold=status)
        return Response(200)
    if req.method == "GET":
        if b.object_lock is None:
            raise _not_configured("bucket object lock not configured")
        e = store.lookup(b, key, vid)
        if not e.legal_hold:
            raise _no_lock(b, key)
        return Response(200, [("Content-Type", "application/xml")],
                        s3_xml.document("LegalHold", el("Status", e.legal_hold)))
    raise S3Error("MethodNotAllowed", f"{req.method} is not allowed on ?legal-hold")


def _no_lock(b: Bucket, key: str) -> S3Error:
    return S3Error("ObjectLockConfigurationNotFoundError", "Object Lock configuration does not exist for this "
                   "object", f"/{b.name}/{key}")


def retained(e: ObjectEntry, now: float) -> bool:
    return bool(e.lock_mode) and e.lock_until is not None and int(e.lock_until) > int(now)


def locked(b: Bucket, e: ObjectEntry, now: float) -> bool:
    """Whether the version may not go at all: retained or held (rgw_lc.cc's pass_object_lock_check,
    which keeps such versions from the lifecycle's expiration)."""
    return b.object_lock is not None and (retained(e, now) or e.legal_hold == "ON")


def check_delete(store: Store, user: User, b: Bucket, e: ObjectEntry, headers: dict[str, str]) -> None:
    """verify_object_lock: may this version be deleted for good? (A delete naming its versionId.)"""
    if b.object_lock is None:
        return
    refused = S3Error("AccessDenied", "forbidden by object lock", f"/{b.name}/{e.key}")  # RGWDeleteObj's message
    if retained(e, store.wall()):
        if e.lock_mode != "GOVERNANCE" or not _bypass(store, user, b, e.key, e.version_id, headers):
            raise refused
    if e.legal_hold == "ON":
        raise refused
