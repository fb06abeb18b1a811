"""Conditional requests (RFC 7232 as S3 applies them) on GET, HEAD and the copy source.

Order matters and is S3's: If-Match decides before If-Unmodified-Since (a matching ETag makes a
later modification irrelevant), If-None-Match before If-Modified-Since. A failed If-Match or
If-Unmodified-Since is 412 PreconditionFailed; a failed If-None-Match or If-Modified-Since is 304
Not Modified on GET/HEAD. For CopyObject and UploadPartCopy the same headers prefixed
`x-amz-copy-source-` apply to the source, and every failure there is 412.
Dates compare at whole seconds, the resolution of Last-Modified.
"""

from __future__ import annotations

from collections.abc import Mapping
from email.utils import parsedate_to_datetime

from services.ceph.rgw.s3_errors import S3Error


class NotModified(Exception):
    """304: the client's copy is current."""


def _etags(value: str) -> list[str]:
    return [v.strip().removeprefix("W/").strip('"') for v in value.split(",")]


def _date(value: str) -> float | None:
    try:
        return parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError):
        return None  # S3 ignores an unparsable date


def check(headers: Mapping[str, str], etag: str, mtime: float, prefix: str = "") -> None:
    """Raise PreconditionFailed (412) or NotModified (304); `prefix` is `x-amz-copy-source-` for copies."""
    mtime_s = int(mtime)
    if_match, if_none = headers.get(prefix + "if-match"), headers.get(prefix + "if-none-match")
    since = _date(headers.get(prefix + "if-modified-since", ""))
    unmod = _date(headers.get(prefix + "if-unmodified-since", ""))
    if if_match is not None:
        if "*" not in _etags(if_match) and etag not in _etags(if_match):
            raise S3Error("PreconditionFailed", "at least one of the pre-conditions you specified did not hold",
                          Condition=prefix + "If-Match")
    elif unmod is not None and mtime_s > unmod:
        raise S3Error("PreconditionFailed", "at least one of the pre-conditions you specified did not hold",
                      Condition=prefix + "If-Unmodified-Since")
    if if_none is not None:
        if "*" in _etags(if_none) or etag in _etags(if_none):
            _not_modified(prefix, "If-None-Match")
    elif since is not None and mtime_s <= since:
        _not_modified(prefix, "If-Modified-Since")


def _not_modified(prefix: str, condition: str) -> None:
    if prefix:
        raise S3Error("PreconditionFailed", "at least one of the pre-conditions you specified did not hold",
                      Condition=prefix + condition)
    raise NotModified()
