"""What S3 checks and keeps of an object's entity headers: key length, Content-MD5, the standard
headers stored with the object, x-amz-meta-* (2 KiB at most), and the Range header on reads."""

from __future__ import annotations

import base64
import re

from services.ceph.rgw.s3_errors import S3Error

MAX_META = 2 << 10  # S3's limit on user metadata (x-amz-meta-* names and values)
KEPT_HEADERS = ("content-type", "content-encoding", "content-disposition", "content-language", "cache-control",
                "expires")
_RANGE_RE = re.compile(r"^bytes=(\d*)-(\d*)$")


def check_key(key: str) -> None:
    if len(key.encode()) > 1024:
        raise S3Error("KeyTooLongError", "your key is too long: at most 1024 bytes")


def object_attrs(headers: dict[str, str]) -> dict[str, str]:
    """What S3 keeps of a PUT's headers: standard entity headers (minus the aws-chunked transfer coding)
    and x-amz-meta-*, whose names and values together may not exceed 2 KiB."""
    attrs = {h: headers[h] for h in KEPT_HEADERS if h in headers}
    if "content-encoding" in attrs:
        codings = [c.strip() for c in attrs["content-encoding"].split(",") if c.strip() != "aws-chunked"]
        if codings:
            attrs["content-encoding"] = ",".join(codings)
        else:
            del attrs["content-encoding"]
    attrs.setdefault("content-type", "binary/octet-stream")
    meta = {h: v for h, v in headers.items() if h.startswith("x-amz-meta-")}
    if sum(len(h) - len("x-amz-meta-") + len(v) for h, v in meta.items()) > MAX_META:
        raise S3Error("MetadataTooLarge", "your metadata headers exceed the maximum allowed metadata size",
                      MaxSizeAllowed=str(MAX_META))
    attrs.update(meta)
    return attrs


def check_md5(headers: dict[str, str], md5: bytes) -> None:
    sent = headers.get("content-md5")
    if sent is not None:
        try:
            want = base64.b64decode(sent, validate=True)
        except ValueError:
            raise S3Error("InvalidDigest", "the Content-MD5 you specified is not valid") from None
        if want != md5:
            raise S3Error("BadDigest", "the Content-MD5 you specified did not match what we received")


def parse_range(header: str, size: int) -> tuple[int, int] | None:
    """`bytes=a-b`, `bytes=a-` or `bytes=-n` → (first, last); None to send the whole object."""
    m = _RANGE_RE.match(header.strip()) if header else None
    if m is None or (not m[1] and not m[2]):
        return None  # absent, multi-range or malformed: S3 ignores it
    if not m[1]:
        n = int(m[2])
        if n == 0:
            raise S3Error("InvalidRange", "the requested range is not satisfiable", size=str(size))
        return max(size - n, 0), size - 1
    first = int(m[1])
    last = min(int(m[2]), size - 1) if m[2] else size - 1
    if first >= size or (m[2] and int(m[2]) < first):
        if m[2] and int(m[2]) < first:
            return None
        raise S3Error("InvalidRange", "the requested range is not satisfiable", size=str(size))
    return first, last
