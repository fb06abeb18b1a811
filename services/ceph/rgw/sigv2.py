"""AWS Signature Version 2 for S3: `Authorization: AWS AKID:signature` and the query form
(`AWSAccessKeyId`, `Expires`, `Signature`) that boto3 still uses for `generate_presigned_url`
unless the client is configured with `signature_version="s3v4"`.

The string to sign is HTTP-verb, Content-MD5, Content-Type, Date (the `Expires` epoch for the
query form; empty when `x-amz-date` is sent), the `x-amz-*` headers lower-cased and sorted, then
the resource: the path as sent plus the sub-resources S3 names (`?uploadId=…&partNumber=…`),
sorted, values decoded. The signature is base64 HMAC-SHA1 with the secret key.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Callable, Mapping
from datetime import datetime
from email.utils import parsedate_to_datetime
from urllib.parse import parse_qsl, unquote

from services.ceph.rgw.s3_errors import S3Error
from services.ceph.rgw.sigv4 import MAX_SKEW_S

SUBRESOURCES = frozenset({
    "accelerate", "acl", "cors", "defaultObjectAcl", "delete", "lifecycle", "location", "logging", "notification",
    "partNumber", "policy", "replication", "requestPayment", "restore", "select", "select-type", "storageClass",
    "tagging", "torrent", "uploadId", "uploads", "versionId", "versioning", "versions", "website", "object-lock",
    "response-cache-control", "response-content-disposition", "response-content-encoding",
    "response-content-language", "response-content-type", "response-expires",
})


def is_presigned(query: str) -> bool:
    q = dict(parse_qsl(query, keep_blank_values=True))
    return "AWSAccessKeyId" in q and "Signature" in q


def canonical_resource(raw_path: str, query: str) -> str:
    """The bucket itself is `/bucket/` (S3's rule, and what boto3 signs), an object `/bucket/key`."""
    path = raw_path or "/"
    if path.count("/") == 1 and path != "/":
        path += "/"
    subs = []
    for part in query.split("&") if query else []:
        name, eq, value = part.partition("=")
        if name in SUBRESOURCES:
            subs.append((name, f"{name}={unquote(value)}" if eq else name))
    subs.sort(key=lambda s: s[0])
    return path + ("?" + "&".join(s for _, s in subs) if subs else "")


def string_to_sign(method: str, raw_path: str, query: str, headers: Mapping[str, str], date: str,
                   amz: Mapping[str, str]) -> str:
    amz_lines = "".join(f"{k}:{amz[k].strip()}\n" for k in sorted(amz))
    return (f"{method}\n{headers.get('content-md5', '').strip()}\n{headers.get('content-type', '').strip()}\n"
            f"{date}\n{amz_lines}{canonical_resource(raw_path, query)}")


def _sign(secret: str, sts: str) -> str:
    return base64.b64encode(hmac.new(secret.encode(), sts.encode(), hashlib.sha1).digest()).decode()


def _check(access_key: str, secret_of: Callable[[str], str | None], sts: str, signature: str) -> str:
    secret = secret_of(access_key)
    if secret is None:
        raise S3Error("InvalidAccessKeyId", f"the access key {access_key} does not exist in our records",
                      AWSAccessKeyId=access_key)
    if not hmac.compare_digest(_sign(secret, sts), signature):
        raise S3Error("SignatureDoesNotMatch", "the request signature we calculated does not match the signature "
                      "you provided; check your key and signing method", AWSAccessKeyId=access_key,
                      StringToSign=sts)
    return access_key


def verify_header(method: str, raw_path: str, query: str, headers: Mapping[str, str],
                  secret_of: Callable[[str], str | None], now: datetime) -> str:
    """`Authorization: AWS AKID:signature` → the access key."""
    cred = headers.get("authorization", "")[4:]
    access_key, sep, signature = cred.rpartition(":")
    if not sep or not access_key:
        raise S3Error("AccessDenied", "malformed AWS Authorization header: expected AWS AccessKeyId:Signature")
    sent = headers.get("x-amz-date") or headers.get("date", "")
    try:
        when = parsedate_to_datetime(sent)
    except (TypeError, ValueError):
        raise S3Error("AccessDenied", "AWS authentication requires a valid Date or x-amz-date header") from None
    if abs((now - when).total_seconds()) > MAX_SKEW_S:
        raise S3Error("RequestTimeTooSkewed", "the difference between the request time and the server's time is "
                      "too large", RequestTime=sent, ServerTime=now.strftime("%a, %d %b %Y %H:%M:%S GMT"))
    date = "" if "x-amz-date" in headers else headers.get("date", "")
    amz = {k: v for k, v in headers.items() if k.startswith("x-amz-")}
    return _check(access_key, secret_of, string_to_sign(method, raw_path, query, headers, date, amz), signature)


def verify_query(method: str, raw_path: str, query: str, headers: Mapping[str, str],
                 secret_of: Callable[[str], str | None], now: datetime) -> str:
    """`?AWSAccessKeyId=…&Expires=…&Signature=…` → the access key; an expired URL is refused first."""
    q = dict(parse_qsl(query, keep_blank_values=True))
    expires = q.get("Expires", "")
    if not expires.isdigit():
        raise S3Error("AccessDenied", "query-string authentication requires the Expires parameter")
    if now.timestamp() > int(expires):
        raise S3Error("AccessDenied", "Request has expired", Expires=expires,
                      ServerTime=now.strftime("%Y-%m-%dT%H:%M:%SZ"))
    view = {k: v for k, v in headers.items() if k in ("content-md5", "content-type")}
    for k in ("content-md5", "content-type"):
        if k not in view and k in q:
            view[k] = q[k]
    amz = {k: v for k, v in headers.items() if k.startswith("x-amz-")}
    amz.update({k.lower(): v for k, v in q.items() if k.lower().startswith("x-amz-")})
    return _check(q["AWSAccessKeyId"], secret_of, string_to_sign(method, raw_path, query, view, expires, amz),
                  q["Signature"])
