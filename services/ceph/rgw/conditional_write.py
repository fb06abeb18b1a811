"""Conditional writes: `If-Match` / `If-None-Match` on PutObject and CompleteMultipartUpload.

RGW evaluates them against the key's current object when the write completes
(`RGWRados::Object::Write::_do_write_meta` → `prepare_atomic_modification`, with the `if_match` /
`if_nomatch` that `RGWPutObj_ObjStore_S3::get_params` and `RGWCompleteMultipart_ObjStore_S3::get_params`
read), and ceph/s3-tests pins the answers (test_put_object_if_match, test_multipart_put_object_if_match
and their versioned-bucket variants, marker `conditional_write`):

- `If-None-Match: *`: 412 PreconditionFailed when the key has a current object; a delete marker as
  the latest version is no object. `If-None-Match: <etag>`: 412 when the current object has that
  ETag, written otherwise (no object included).
- `If-Match: *` or `If-Match: <etag>` with no current object (none, or a delete marker): 404
  NoSuchKey, as AWS answers too. With one, `*` writes and an ETag other than the current one is 412.
- ETags compare unquoted (`rgw_string_unquote`): boto3 sends the quoted ETag a PUT returned.

The check runs twice: before anything is written (a refused request costs no RADOS write), and again
in `Store.commit` under the key's commit lock, where it and the index write are atomic with respect
to every other write of the key (PUT, copy, completion, delete marker, version removal). A write
refused there frees its data (a PUT's; a completion keeps its parts for the upload), so nothing of it
stays. CopyObject takes neither header here: its conditions are the source's
`x-amz-copy-source-if-*` (conditional.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from services.ceph.rgw.bucket_index import ObjectEntry
from services.ceph.rgw.s3_errors import S3Error

Check = Callable[[ObjectEntry | None], None]


def _unquote(value: str) -> str:
    v = value.strip()
    return v[1:-1] if len(v) >= 2 and v[0] == v[-1] == '"' else v


def precondition(headers: Mapping[str, str], bucket: str, key: str) -> Check | None:
    """The write's precondition from its headers, None when it names none. The check takes the key's
    latest version (None when there is none) and raises the refusal."""
    if_match, if_none = headers.get("if-match"), headers.get("if-none-match")
    if if_match is None and if_none is None:
        return None

    def check(latest: ObjectEntry | None) -> None:
        current = None if latest is None or latest.delete_marker else latest
        if if_match is not None:  # first, as RGW tests them
            if current is None:  # RGW's -ENOENT, as AWS answers it: the key has no object to match
                raise S3Error("NoSuchKey", "the specified key does not exist", f"/{bucket}/{key}", Key=key)
            want = _unquote(if_match)
            if want != "*" and want != current.etag:
                raise _failed("If-Match")
        if if_none is not None:
            want = _unquote(if_none)
            if current is not None and (want == "*" or want == current.etag):
                raise _failed("If-None-Match")

    return check


def _failed(condition: str) -> S3Error:
    return S3Error("PreconditionFailed", "at least one of the pre-conditions you specified did not hold",
                   Condition=condition)
