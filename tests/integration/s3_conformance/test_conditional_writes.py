"""Conditional writes (If-Match / If-None-Match) on PutObject and CompleteMultipartUpload as RGW answers
them, against the deployed twin (ceph/s3-tests test_put_object_if_match, test_multipart_put_object_if_match
and their versioned variants): 412 PreconditionFailed for a key that exists (If-None-Match) or has
another ETag (If-Match), 404 NoSuchKey for If-Match on a key with no current object (a delete marker
included), nothing written when refused (a multipart upload stays, to be completed later), concurrent
create-only PUTs of one key with exactly one winner, and CopyObject's own x-amz-copy-source-if-*
conditions unchanged."""

from __future__ import annotations

import hashlib
from concurrent.futures import ThreadPoolExecutor

import pytest
from botocore.client import BaseClient
from botocore.exceptions import ClientError

from tests.integration.s3_conformance.s3_twin import S3Twin, error

MiB = 1 << 20
B, V = "cond-b", "cond-v"


@pytest.fixture(scope="module", autouse=True)
def buckets(twin: S3Twin) -> None:
    s3 = twin.client()
    s3.create_bucket(Bucket=B)
    s3.create_bucket(Bucket=V)
    s3.put_bucket_versioning(Bucket=V, VersioningConfiguration={"Status": "Enabled"})


def body(s3: BaseClient, key: str, bucket: str = B) -> bytes:
    return bytes(s3.get_object(Bucket=bucket, Key=key)["Body"].read())


def refused(call, *args: object, **kw: object) -> tuple[int, str]:  # type: ignore[no-untyped-def]
    with pytest.raises(ClientError) as err:
        call(*args, **kw)
    return error(err)


def versions(s3: BaseClient, bucket: str, key: str) -> list[tuple[str, bool]]:
    lv = s3.list_object_versions(Bucket=bucket, Prefix=key)
    return sorted((v["VersionId"], v["IsLatest"]) for v in lv.get("Versions", []) + lv.get("DeleteMarkers", [])
                  if v["Key"] == key)


# -- PutObject --------------------------------------------------------------------------------


def test_if_none_match_star_creates_a_new_key_and_refuses_an_existing_one(s3: BaseClient) -> None:
    s3.put_object(Bucket=B, Key="create-once", Body=b"first", IfNoneMatch="*")
    assert refused(s3.put_object, Bucket=B, Key="create-once", Body=b"second", IfNoneMatch="*") == (
        412, "PreconditionFailed")
    assert body(s3, "create-once") == b"first"


def test_if_none_match_an_etag_refuses_the_current_one_only(s3: BaseClient) -> None:
    etag = s3.put_object(Bucket=B, Key="nm-etag", Body=b"v1")["ETag"]
    assert refused(s3.put_object, Bucket=B, Key="nm-etag", Body=b"v2", IfNoneMatch=etag) == (412, "PreconditionFailed")
    assert body(s3, "nm-etag") == b"v1"
    s3.put_object(Bucket=B, Key="nm-etag", Body=b"v3", IfNoneMatch='"badetag"')
    assert body(s3, "nm-etag") == b"v3"


def test_if_match_the_current_etag_writes_quoted_or_not(s3: BaseClient) -> None:
    etag = s3.put_object(Bucket=B, Key="cas", Body=b"v1")["ETag"]
    etag2 = s3.put_object(Bucket=B, Key="cas", Body=b"v2", IfMatch=etag)["ETag"]  # quoted, as S3 returned it
    assert body(s3, "cas") == b"v2"
    s3.put_object(Bucket=B, Key="cas", Body=b"v3", IfMatch=etag2.strip('"'))
    assert body(s3, "cas") == b"v3"
    s3.put_object(Bucket=B, Key="cas", Body=b"v4", IfMatch="*")  # any current object
    assert body(s3, "cas") == b"v4"


def test_if_match_another_etag_is_refused_and_nothing_changes(s3: BaseClient) -> None:
    etag = s3.put_object(Bucket=B, Key="stale", Body=b"current", Metadata={"m": "1"})["ETag"]
    assert refused(s3.put_object, Bucket=B, Key="stale", Body=b"lost update", Metadata={"m": "2"},
                   IfMatch=f'"{hashlib.md5(b"older").hexdigest()}"') == (412, "PreconditionFailed")
    head = s3.head_object(Bucket=B, Key="stale")
    assert (head["ETag"], head["Metadata"], body(s3, "stale")) == (etag, {"m": "1"}, b"current")


def test_if_match_on_a_missing_key_is_no_such_key_and_writes_nothing(s3: BaseClient) -> None:
    for condition in ("*", '"badetag"'):
        assert refused(s3.put_object, Bucket=B, Key="never", Body=b"x", IfMatch=condition) == (404, "NoSuchKey")
    assert refused(s3.head_object, Bucket=B, Key="never")[0] == 404


def test_a_delete_marker_is_no_object_to_either_condition(s3: BaseClient) -> None:
    s3.put_object(Bucket=V, Key="marked", Body=b"old")
    s3.delete_object(Bucket=V, Key="marked")
    before = versions(s3, V, "marked")
    assert refused(s3.put_object, Bucket=V, Key="marked", Body=b"x", IfMatch="*") == (404, "NoSuchKey")
    assert versions(s3, V, "marked") == before  # no version added by the refusal
    v = s3.put_object(Bucket=V, Key="marked", Body=b"again", IfNoneMatch="*")["VersionId"]
    assert body(s3, "marked", V) == b"again" and (v, True) in versions(s3, V, "marked")


def test_a_refused_put_in_a_versioned_bucket_adds_no_version(s3: BaseClient) -> None:
    etag = s3.put_object(Bucket=V, Key="kept", Body=b"v1")["ETag"]
    before = versions(s3, V, "kept")
    assert refused(s3.put_object, Bucket=V, Key="kept", Body=b"v2", IfNoneMatch="*") == (412, "PreconditionFailed")
    assert refused(s3.put_object, Bucket=V, Key="kept", Body=b"v2", IfMatch='"0"') == (412, "PreconditionFailed")
    assert versions(s3, V, "kept") == before
    s3.put_object(Bucket=V, Key="kept", Body=b"v2", IfMatch=etag)  # the current version's ETag
    assert len(versions(s3, V, "kept")) == 2 and body(s3, "kept", V) == b"v2"


def test_concurrent_create_only_puts_have_one_winner(twin: S3Twin) -> None:
    """The check and the write are one step for a key: of racing If-None-Match: * PUTs, one writes."""
    clients = [twin.client() for _ in range(6)]

    def put(i: int) -> bytes | None:
        try:
            clients[i].put_object(Bucket=B, Key="race", Body=f"writer {i}".encode() * 1000, IfNoneMatch="*")
            return f"writer {i}".encode() * 1000
        except ClientError as e:
            assert e.response["Error"]["Code"] == "PreconditionFailed", e.response
            return None

    with ThreadPoolExecutor(len(clients)) as pool:
        won = [b for b in pool.map(put, range(len(clients))) if b is not None]
    assert len(won) == 1
    assert body(clients[0], "race") == won[0]


# -- CompleteMultipartUpload ------------------------------------------------------------------


def upload(s3: BaseClient, key: str, data: bytes = b"p" * (5 * MiB), bucket: str = B) -> tuple[str, dict]:
    up = s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
    e1 = s3.upload_part(Bucket=bucket, Key=key, UploadId=up, PartNumber=1, Body=data)["ETag"]
    e2 = s3.upload_part(Bucket=bucket, Key=key, UploadId=up, PartNumber=2, Body=b"end")["ETag"]
    return up, {"Parts": [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2}]}


def pending(s3: BaseClient, key: str, bucket: str = B) -> list[str]:
    return [u["UploadId"] for u in s3.list_multipart_uploads(Bucket=bucket, Prefix=key).get("Uploads", [])
            if u["Key"] == key]


def test_complete_if_none_match_star_refused_over_an_object_and_the_upload_stays(s3: BaseClient) -> None:
    etag = s3.put_object(Bucket=B, Key="mp-exists", Body=b"small")["ETag"]
    up, parts = upload(s3, "mp-exists")
    assert refused(s3.complete_multipart_upload, Bucket=B, Key="mp-exists", UploadId=up, MultipartUpload=parts,
                   IfNoneMatch="*") == (412, "PreconditionFailed")
    assert s3.head_object(Bucket=B, Key="mp-exists")["ETag"] == etag and body(s3, "mp-exists") == b"small"
    assert pending(s3, "mp-exists") == [up]
    assert [p["PartNumber"] for p in s3.list_parts(Bucket=B, Key="mp-exists", UploadId=up)["Parts"]] == [1, 2]
    s3.complete_multipart_upload(Bucket=B, Key="mp-exists", UploadId=up, MultipartUpload=parts)  # unconditional
    assert body(s3, "mp-exists") == b"p" * (5 * MiB) + b"end" and pending(s3, "mp-exists") == []


def test_complete_if_none_match_star_creates_a_new_key(s3: BaseClient) -> None:
    up, parts = upload(s3, "mp-new")
    r = s3.complete_multipart_upload(Bucket=B, Key="mp-new", UploadId=up, MultipartUpload=parts, IfNoneMatch="*")
    assert r["ETag"].strip('"').endswith("-2") and body(s3, "mp-new").endswith(b"end")


def test_complete_if_match_wrong_then_right(s3: BaseClient) -> None:
    etag = s3.put_object(Bucket=B, Key="mp-cas", Body=b"before")["ETag"]
    up, parts = upload(s3, "mp-cas")
    assert refused(s3.complete_multipart_upload, Bucket=B, Key="mp-cas", UploadId=up, MultipartUpload=parts,
                   IfMatch='"badetag"') == (412, "PreconditionFailed")
    assert body(s3, "mp-cas") == b"before" and pending(s3, "mp-cas") == [up]
    s3.complete_multipart_upload(Bucket=B, Key="mp-cas", UploadId=up, MultipartUpload=parts, IfMatch=etag)
    assert body(s3, "mp-cas").endswith(b"end") and pending(s3, "mp-cas") == []


def test_complete_if_match_on_a_missing_key_is_no_such_key_and_the_upload_stays(s3: BaseClient) -> None:
    up, parts = upload(s3, "mp-missing", bucket=V)
    s3.put_object(Bucket=V, Key="mp-missing", Body=b"x")
    s3.delete_object(Bucket=V, Key="mp-missing")  # a delete marker is the latest version
    before = versions(s3, V, "mp-missing")
    assert refused(s3.complete_multipart_upload, Bucket=V, Key="mp-missing", UploadId=up, MultipartUpload=parts,
                   IfMatch="*") == (404, "NoSuchKey")
    assert versions(s3, V, "mp-missing") == before and pending(s3, "mp-missing", V) == [up]
    s3.complete_multipart_upload(Bucket=V, Key="mp-missing", UploadId=up, MultipartUpload=parts, IfNoneMatch="*")
    assert body(s3, "mp-missing", V).endswith(b"end")


# -- CopyObject keeps its own conditions --------------------------------------------------------


def test_copy_object_and_its_copy_source_conditions_are_unchanged(s3: BaseClient) -> None:
    etag = s3.put_object(Bucket=B, Key="copy-src", Body=b"source")["ETag"]
    src = {"Bucket": B, "Key": "copy-src"}
    s3.copy_object(Bucket=B, Key="copy-dst", CopySource=src, CopySourceIfMatch=etag)
    assert body(s3, "copy-dst") == b"source"
    assert refused(s3.copy_object, Bucket=B, Key="copy-dst2", CopySource=src, CopySourceIfMatch='"badetag"') == (
        412, "PreconditionFailed")
    assert refused(s3.copy_object, Bucket=B, Key="copy-dst2", CopySource=src, CopySourceIfNoneMatch=etag) == (
        412, "PreconditionFailed")
    assert refused(s3.head_object, Bucket=B, Key="copy-dst2")[0] == 404
