"""S3 bucket lifecycle as RGW runs it: the `?lifecycle` configuration (rules with a filter on prefix,
tags and size; Expiration by Days or Date, ExpiredObjectDeleteMarker, NoncurrentVersionExpiration,
AbortIncompleteMultipartUpload) and the pass that applies it.

A pass (`run`) is what RGW's lifecycle worker does once a day: a current object whose age has
reached the rule's days expires (removed, or in a versioned bucket hidden by a delete marker); a
noncurrent version goes `NoncurrentDays` after it stopped being current; a delete marker left alone
in its history goes; an upload initiated that many days ago is aborted. RGW measures days from
midnight UTC; with `rgw_lc_debug_interval` > 0 a "day" is that many seconds and ages are exact, which
is what the twin's `day` argument is. Transitions need a second storage class, which this gateway
does not have: refused with InvalidStorageClass, as RGW refuses an unknown one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import UTC, datetime
from xml.etree import ElementTree as ET

from services.ceph.rgw import multipart, object_lock, objects, s3_xml
from services.ceph.rgw.bucket_index import Bucket, Rule
from services.ceph.rgw.s3_errors import S3Error
from services.ceph.rgw.s3_xml import element as el
from services.ceph.rgw.store import Store
from services.ceph.rgw.wire import Request, Response

DAY = 86400.0
MAX_RULES = 1000


def _bad(message: str) -> S3Error:
    return S3Error("InvalidArgument", message)


def _days(node: ET.Element, name: str, what: str) -> int | None:
    text = node.findtext(name)
    if text is None:
        return None
    if not text.strip().isdigit() or int(text) <= 0:
        raise _bad(f"'{name}' for {what} action must be a positive integer")
    return int(text)


def _filter(r: ET.Element, rule: Rule) -> None:
    f = r.find("Filter")
    if f is None:  # the older form: a Prefix on the rule itself
        rule.prefix = r.findtext("Prefix") or ""
        return
    scope = f.find("And")
    if scope is None:
        scope = f
    elif len(f) != 1:
        raise S3Error("MalformedXML", "a Filter holds And or a single condition, not both")
    rule.prefix = scope.findtext("Prefix") or ""
    for t in scope.findall("Tag"):
        k, v = t.findtext("Key"), t.findtext("Value")
        if k is None or v is None:
            raise S3Error("MalformedXML", "each Tag needs a Key and a Value")
        if k in rule.tags:
            raise _bad("Duplicate Tag Keys are not allowed.")
        rule.tags[k] = v
    for name, attr in (("ObjectSizeGreaterThan", "size_gt"), ("ObjectSizeLessThan", "size_lt")):
        text = scope.findtext(name)
        if text is not None:
            if not text.strip().isdigit():
                raise _bad(f"{name} must be a non-negative integer")
            setattr(rule, attr, int(text))
    if scope is f and sum(x is not None for x in (f.find("Prefix"), f.find("Tag"), f.find("ObjectSizeGreaterThan"),
                                                  f.find("ObjectSizeLessThan"))) > 1:
        raise S3Error("MalformedXML", "a Filter with more than one condition needs them inside And")


def parse(body: bytes) -> list[Rule]:
    """A LifecycleConfiguration document; MalformedXML / InvalidArgument / InvalidStorageClass say
    what is wrong, before anything changes."""
    doc = s3_xml.parse(body, "LifecycleConfiguration")
    rules: list[Rule] = []
    for r in doc.findall("Rule"):
        status = (r.findtext("Status") or "").strip()
        if status not in ("Enabled", "Disabled"):
            raise S3Error("MalformedXML", f"a rule's Status is Enabled or Disabled, got {status!r}")
        rule = Rule((r.findtext("ID") or "").strip(), status == "Enabled")
        if len(rule.id) > 255:
            raise _bad("ID length should not exceed allowed limit of 255")
        _filter(r, rule)
        if r.find("Transition") is not None or r.find("NoncurrentVersionTransition") is not None:
            raise S3Error("InvalidStorageClass", "the storage class you specified is not valid: this zone has only "
                          "STANDARD, so there is nothing to transition to")
        exp = r.find("Expiration")
        if exp is not None:
            rule.days = _days(exp, "Days", "Expiration")
            date = exp.findtext("Date")
            if date is not None:
                try:
                    when = datetime.fromisoformat(date.strip().replace("Z", "+00:00"))
                except ValueError:
                    raise _bad(f"'Date' must be in ISO 8601 format, got {date!r}") from None
                when = when if when.tzinfo else when.replace(tzinfo=UTC)
                if (when.hour, when.minute, when.second, when.microsecond) != (0, 0, 0, 0):
                    raise _bad("'Date' must be at midnight GMT")
                rule.date = when.timestamp()
            marker = (exp.findtext("ExpiredObjectDeleteMarker") or "").strip().lower()
            rule.expired_marker = marker == "true"
            if [rule.days is not None, rule.date is not None, rule.expired_marker].count(True) != 1:
                raise S3Error("MalformedXML", "Expiration holds one of Days, Date and ExpiredObjectDeleteMarker")
        nce = r.find("NoncurrentVersionExpiration")
        if nce is not None:
            rule.noncurrent_days = _days(nce, "NoncurrentDays", "NoncurrentVersionExpiration")
        abort = r.find("AbortIncompleteMultipartUpload")
        if abort is not None:
            rule.abort_days = _days(abort, "DaysAfterInitiation", "AbortIncompleteMultipartUpload")
            if rule.tags or rule.size_gt is not None or rule.size_lt is not None:
                raise _bad("AbortIncompleteMultipartUpload cannot be specified with Tags or object sizes")
        if exp is None and nce is None and abort is None:
            raise S3Error("MalformedXML", "a rule needs at least one action")
        rules.append(rule)
    if not rules:
        raise S3Error("MalformedXML", "a LifecycleConfiguration needs at least one Rule")
    if len(rules) > MAX_RULES:
        raise _bad(f"a lifecycle configuration holds at most {MAX_RULES} rules")
    ids = [r.id for r in rules if r.id]
    if len(ids) != len(set(ids)):
        raise _bad("Rule ID must be unique. Found same ID for more than one rule")
    return rules


def to_xml(rules: list[Rule]) -> bytes:
    out = ""
    for r in rules:
        sized = r.size_gt is not None or r.size_lt is not None
        conds = ([el("Prefix", r.prefix)] if r.prefix or not (r.tags or sized) else []) + [
            f"<Tag>{el('Key', k)}{el('Value', v)}</Tag>" for k, v in r.tags.items()]
        conds += [el("ObjectSizeGreaterThan", r.size_gt)] if r.size_gt is not None else []
        conds += [el("ObjectSizeLessThan", r.size_lt)] if r.size_lt is not None else []
        flt = "".join(conds) if len(conds) == 1 else f"<And>{''.join(conds)}</And>"
        s = (el("ID", r.id) if r.id else "") + f"<Filter>{flt}</Filter>" + el("Status", "Enabled" if r.enabled
                                                                                 else "Disabled")
        if r.days is not None:
            s += f"<Expiration>{el('Days', r.days)}</Expiration>"
        elif r.date is not None:
            s += f"<Expiration>{el('Date', s3_xml.iso8601(r.date))}</Expiration>"
        elif r.expired_marker:
            s += f"<Expiration>{el('ExpiredObjectDeleteMarker', 'true')}</Expiration>"
        if r.noncurrent_days is not None:
            s += f"<NoncurrentVersionExpiration>{el('NoncurrentDays', r.noncurrent_days)}</NoncurrentVersionExpiration>"
        if r.abort_days is not None:
            s += f"<AbortIncompleteMultipartUpload>{el('DaysAfterInitiation', r.abort_days)}"
            s += "</AbortIncompleteMultipartUpload>"
        out += f"<Rule>{s}</Rule>"
    return s3_xml.document("LifecycleConfiguration", out)


def bucket_lifecycle(store: Store, req: Request, b: Bucket) -> Response:
    """`?lifecycle` on a bucket: PUT replaces its rules, GET returns them, DELETE drops them."""
    if req.method == "PUT":
        rules = parse(req.body)  # refused before anything changes
        store.configure(b, "lifecycle", rules, req.body)
        return Response(200)
    if req.method == "GET":
        if not b.lifecycle:
            raise S3Error("NoSuchLifecycleConfiguration", "The lifecycle configuration does not exist",
                          f"/{b.name}", BucketName=b.name)
        return Response(200, [("Content-Type", "application/xml")], to_xml(b.lifecycle))
    if req.method == "DELETE":
        store.configure(b, "lifecycle", [], None)
        return Response(204)
    raise S3Error("MethodNotAllowed", f"{req.method} is not allowed on ?lifecycle")


def _reached(since: float, days: int, now: float, day: float) -> bool:
    """RGW's obj_has_expired: with real days, `now` is first rounded down to midnight UTC."""
    base = math.floor(now / DAY) * DAY if day == DAY else now
    return base - since >= days * day


@dataclass
class PassResult:
    expired: list[str] = field(default_factory=list)  # keys given a delete marker or removed
    noncurrent: list[tuple[str, str]] = field(default_factory=list)  # (key, version id) removed
    markers: list[str] = field(default_factory=list)  # lone delete markers removed
    aborted: list[str] = field(default_factory=list)  # upload ids


def run_bucket(store: Store, b: Bucket, now: float, day: float = DAY) -> PassResult:
    """One lifecycle pass over bucket `b` at wall time `now`."""
    done = PassResult()
    rules = [r for r in b.lifecycle if r.enabled]
    if not rules:
        return done
    with store.lock:
        histories = {k: list(v) for k, v in b.versions.items()}
    for key, history in histories.items():
        current = history[0]
        for r in rules:
            if current.delete_marker or not r.matches(current):
                continue
            if (r.days is not None and _reached(current.mtime, r.days, now, day)) or (
                    r.date is not None and now >= r.date):
                objects.delete_object(store, b.owner, b.name, key)
                done.expired.append(key)
                break
        if done.expired and done.expired[-1] == key:
            continue  # its versions became noncurrent just now, and a new marker is not a lone old one
        with store.lock:
            history = list(b.versions.get(key, []))
        for newer, old in zip(history, history[1:], strict=False):
            for r in rules:
                if (r.noncurrent_days is not None and r.matches_version(old)
                        and _reached(newer.mtime, r.noncurrent_days, now, day)
                        and not object_lock.locked(b, old, now)):  # a locked version stays
                    objects.delete_object(store, b.owner, b.name, key, old.version_id)
                    done.noncurrent.append((key, old.version_id))
                    break
        with store.lock:
            history = list(b.versions.get(key, []))
        if len(history) == 1 and history[0].delete_marker and any(
                r.expired_marker and r.matches_version(history[0]) for r in rules):
            objects.delete_object(store, b.owner, b.name, key, history[0].version_id)
            done.markers.append(key)
    with store.lock:
        uploads = list(store.uploads_of(b).values())
    for up in uploads:
        if any(r.abort_days is not None and up.key.startswith(r.prefix)
               and _reached(up.initiated, r.abort_days, now, day) for r in rules):
            try:
                multipart.Multipart(store).abort(b, up.key, up.upload_id)
                done.aborted.append(up.upload_id)
            except S3Error:
                pass  # completed or aborted by its client meanwhile
    return done


def run(store: Store, now: float, day: float = DAY) -> dict[str, PassResult]:
    """A lifecycle pass over every bucket with a configuration; bucket name → what it did."""
    with store.lock:
        buckets = [b for b in store.buckets.values() if b.lifecycle]
    return {b.name: run_bucket(store, b, now, day) for b in buckets}
