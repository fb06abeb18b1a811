"""SigV4 presigned URLs: the signature in the query string (`X-Amz-Algorithm=AWS4-HMAC-SHA256`,
`X-Amz-Credential`, `X-Amz-Date`, `X-Amz-Expires`, `X-Amz-SignedHeaders`, `X-Amz-Signature`).

The canonical request is built as for header auth, from the query without `X-Amz-Signature`
and with `UNSIGNED-PAYLOAD` as the payload hash (the URL is made before the body exists). A
URL past `X-Amz-Date + X-Amz-Expires` is refused as S3 does: 403 AccessDenied "Request has
expired", checked before the signature, so an expired URL never reveals whether it was valid.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from urllib.parse import parse_qsl

from services.ceph.rgw import sigv4
from services.ceph.rgw.s3_errors import S3Error

MAX_EXPIRES_S = 7 * 24 * 3600  # S3: a presigned URL lives at most 7 days
_REQUIRED = ("X-Amz-Credential", "X-Amz-Date", "X-Amz-Expires", "X-Amz-SignedHeaders", "X-Amz-Signature")


def is_presigned(query: str) -> bool:
    return "X-Amz-Algorithm=" in query or "X-Amz-Signature=" in query


def _query_error(message: str) -> S3Error:
    return S3Error("AuthorizationQueryParametersError", message)


def verify_query(
    method: str, raw_path: str, query: str, headers: Mapping[str, str],
    secret_of: Callable[[str], str | None], now: datetime,
) -> sigv4.Signed:
    q = dict(parse_qsl(query, keep_blank_values=True))
    if q.get("X-Amz-Algorithm") != sigv4.ALGORITHM:
        raise _query_error("X-Amz-Algorithm only supports \"AWS4-HMAC-SHA256\"")
    missing = [p for p in _REQUIRED if p not in q]
    if missing:
        raise _query_error(f"query-string authentication requires the {', '.join(missing)} parameter(s)")
    cred, secret = sigv4.parse_credential(q["X-Amz-Credential"], secret_of)
    amz_date = q["X-Amz-Date"]
    when = sigv4.parse_amz_date(amz_date)
    if not q["X-Amz-Expires"].isdigit():
        raise _query_error("X-Amz-Expires should be a number")
    expires = int(q["X-Amz-Expires"])
    if expires > MAX_EXPIRES_S:
        raise _query_error("X-Amz-Expires must be less than a week (in seconds) that is 604800")
    if now > when + timedelta(seconds=expires):
        raise S3Error("AccessDenied", "Request has expired", X_Amz_Expires=str(expires),
                      Expires=(when + timedelta(seconds=expires)).strftime("%Y-%m-%dT%H:%M:%SZ"),
                      ServerTime=now.strftime("%Y-%m-%dT%H:%M:%SZ"))
    if when - now > timedelta(seconds=sigv4.MAX_SKEW_S):
        raise S3Error("AccessDenied", "Request is not valid yet")
    signed = q["X-Amz-SignedHeaders"].split(";")
    if "host" not in signed:
        raise _query_error("X-Amz-SignedHeaders must include host")
    rest = "&".join(p for p in query.split("&") if not p.startswith("X-Amz-Signature="))
    payload = headers.get("x-amz-content-sha256", sigv4.UNSIGNED_PAYLOAD)
    creq = sigv4.canonical_request(method, raw_path, rest, headers, signed, payload)
    return sigv4.check_signature(creq, amz_date, cred, secret, q["X-Amz-Signature"].lower())
