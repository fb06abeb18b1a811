"""Who sent a request, and its body as the client meant it.

One entry point over the four ways S3 requests are signed: SigV4 in the Authorization header or
in the query (presigned URL), SigV2 likewise. A streaming (`aws-chunked`) body is decoded and its
chunk signatures or trailing checksum verified here, so the operations only ever see the payload.
A request with no signature at all is anonymous (`access_key` ""): what it may do is for the
bucket's policy and ACLs to say (the gateway's `authorize`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from services.ceph.rgw import checksums, chunked, presign, sigv2, sigv4
from services.ceph.rgw.s3_errors import S3Error
from services.ceph.rgw.users import Users


@dataclass(frozen=True)
class Authenticated:
    access_key: str  # "" for an anonymous request
    body: bytes  # the payload, aws-chunked framing removed
    checksums: dict[str, str]  # verified x-amz-checksum-* (from headers or trailers), echoed by S3


def authenticate(method: str, raw_path: str, query: str, headers: dict[str, str], body: bytes,
                 users: Users, now: datetime) -> Authenticated:
    auth = headers.get("authorization", "")
    signed: sigv4.Signed | None = None
    if presign.is_presigned(query):
        signed = presign.verify_query(method, raw_path, query, headers, users.secret_of, now)
        key = signed.access_key
    elif sigv2.is_presigned(query):
        key = sigv2.verify_query(method, raw_path, query, headers, users.secret_of, now)
    elif auth.startswith(sigv4.ALGORITHM):
        signed = sigv4.verify_header(method, raw_path, query, headers, users.secret_of, now)
        key = signed.access_key
    elif auth.startswith("AWS "):
        key = sigv2.verify_header(method, raw_path, query, headers, users.secret_of, now)
    elif auth:
        raise S3Error("NotImplemented", "only AWS4-HMAC-SHA256 and AWS (SigV2) signatures are supported")
    else:
        key = ""  # anonymous
    found: dict[str, str] = {}
    if method in ("PUT", "POST"):
        if headers.get("x-amz-content-sha256", "").startswith(sigv4.STREAMING_PREFIX):
            body, found = chunked.decode(body, headers, signed)
            found |= checksums.verify({k: v for k, v in headers.items() if k != "x-amz-checksum-mode"}, body)
            return Authenticated(key, body, found)
        extra = {k: v for k, v in headers.items() if k.startswith("x-amz-checksum-") and k != "x-amz-checksum-mode"}
        if signed is not None and extra and len(body) >= checksums.PARALLEL_MIN:
            pending = checksums.alongside(checksums.verify, extra, body)  # CRC32 & co. on another core
            try:
                sigv4.check_payload(headers, body)
            except S3Error:
                pending.cancel()  # the payload hash failed first, as when they run in turn
                raise
            found |= pending.result()
        else:
            if signed is not None:
                sigv4.check_payload(headers, body)
            found |= checksums.verify(extra, body)
    return Authenticated(key, body, found)
