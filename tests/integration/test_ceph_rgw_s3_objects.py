"""Real boto3 against the RGW gateway: CopyObject (COPY/REPLACE), conditional GET/HEAD, DeleteObjects
(with Quiet), user metadata."""

from __future__ import annotations

import base64
import hashlib
import os
import zlib
from datetime import UTC, datetime, timedelta

import pytest
import requests
from botocore.client import BaseClient
from botocore.exceptions import ClientError

from services.ceph.rgw.gateway import Gateway
from services.ceph.rgw.http import RunningServer
from tests.integration import test_ceph_rgw_s3 as base
from tests.integration.test_ceph_rgw_s3 import client, code

gateway = base.gateway  # the shared fixtures: one gateway and client per test module
s3 = base.s3


def _status(e: pytest.ExceptionInfo[ClientError]) -> int:
    return int(e.value.response["ResponseMetadata"]["HTTPStatusCode"])


def test_copy_object_directives(s3: BaseClient) -> None:
    s3.create_bucket(Bucket="cp-src")
    s3.create_bucket(Bucket="cp-dst")
    data = os.urandom(6 << 20)
    put = s3.put_object(Bucket="cp-src", Key="a", Body=data, ContentType="text/x-a", Metadata={"m": "1"})
    r = s3.copy_object(Bucket="cp-dst", Key="b", CopySource={"Bucket": "cp-src", "Key": "a"})
    assert r["CopyObjectResult"]["ETag"] == put["ETag"]
    got = s3.get_object(Bucket="cp-dst", Key="b")
    assert got["Body"].read() == data and got["Metadata"] == {"m": "1"} and got["ContentType"] == "text/x-a"
    s3.copy_object(Bucket="cp-dst", Key="c", CopySource="cp-src/a", MetadataDirective="REPLACE",
                   Metadata={"n": "2"}, ContentType="text/x-c")
    head = s3.head_object(Bucket="cp-dst", Key="c")
    assert head["Metadata"] == {"n": "2"} and head["ContentType"] == "text/x-c"
    with pytest.raises(ClientError) as e:
        s3.copy_object(Bucket="cp-src", Key="a", CopySource="cp-src/a")
    assert code(e) == "InvalidRequest"
    s3.copy_object(Bucket="cp-src", Key="a", CopySource="cp-src/a", MetadataDirective="REPLACE", Metadata={"x": "y"})
    assert s3.head_object(Bucket="cp-src", Key="a")["Metadata"] == {"x": "y"}
    assert s3.get_object(Bucket="cp-src", Key="a")["Body"].read() == data
    with pytest.raises(ClientError) as e:
        s3.copy_object(Bucket="cp-dst", Key="d", CopySource="cp-src/missing")
    assert code(e) == "NoSuchKey"
    with pytest.raises(ClientError) as e:
        s3.copy_object(Bucket="cp-dst", Key="d", CopySource="cp-src/a", CopySourceIfMatch='"0000"')
    assert code(e) == "PreconditionFailed" and _status(e) == 412
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket="cp-dst", Key="d")
    assert _status(e) == 404


def test_conditional_get_head(s3: BaseClient) -> None:
    s3.create_bucket(Bucket="cond")
    etag = s3.put_object(Bucket="cond", Key="k", Body=b"v1")["ETag"]
    mtime = s3.head_object(Bucket="cond", Key="k")["LastModified"]
    before, after = mtime - timedelta(hours=1), mtime + timedelta(hours=1)
    assert s3.get_object(Bucket="cond", Key="k", IfMatch=etag)["Body"].read() == b"v1"
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket="cond", Key="k", IfMatch='"nope"')
    assert _status(e) == 412 and code(e) == "PreconditionFailed"
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket="cond", Key="k", IfNoneMatch=etag)
    assert _status(e) == 304
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket="cond", Key="k", IfNoneMatch=etag)
    assert _status(e) == 304
    assert s3.get_object(Bucket="cond", Key="k", IfNoneMatch='"other"')["Body"].read() == b"v1"
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket="cond", Key="k", IfModifiedSince=after)
    assert _status(e) == 304
    assert s3.get_object(Bucket="cond", Key="k", IfModifiedSince=before)["Body"].read() == b"v1"
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket="cond", Key="k", IfUnmodifiedSince=before)
    assert _status(e) == 412
    assert s3.head_object(Bucket="cond", Key="k", IfUnmodifiedSince=after)["ETag"] == etag
    # RFC 7232 precedence as S3 applies it: a matching If-Match overrides a failing If-Unmodified-Since
    assert s3.get_object(Bucket="cond", Key="k", IfMatch=etag, IfUnmodifiedSince=before)["Body"].read() == b"v1"
    with pytest.raises(ClientError) as e:  # and a matching If-None-Match wins over a passing If-Modified-Since
        s3.get_object(Bucket="cond", Key="k", IfNoneMatch=etag, IfModifiedSince=before)
    assert _status(e) == 304
    assert datetime.now(UTC) - mtime < timedelta(minutes=5)


def test_delete_objects_and_quiet(gateway: tuple[Gateway, RunningServer], s3: BaseClient) -> None:
    s3.create_bucket(Bucket="multi-del")
    for k in ("a", "b", "c", "d/e"):
        s3.put_object(Bucket="multi-del", Key=k, Body=k.encode())
    r = s3.delete_objects(Bucket="multi-del", Delete={"Objects": [{"Key": "a"}, {"Key": "b"}, {"Key": "ghost"}]})
    assert sorted(d["Key"] for d in r["Deleted"]) == ["a", "b", "ghost"] and "Errors" not in r
    r = s3.delete_objects(Bucket="multi-del", Delete={"Objects": [{"Key": "c"}], "Quiet": True})
    assert "Deleted" not in r and "Errors" not in r
    assert [o["Key"] for o in s3.list_objects_v2(Bucket="multi-del")["Contents"]] == ["d/e"]
    r = s3.delete_objects(Bucket="multi-del", Delete={"Objects": [{"Key": "d/e", "VersionId": "not-a-version"}]})
    assert r["Errors"][0]["Code"] == "InvalidArgument"
    # S3 requires an integrity header on the body
    _, server = gateway
    raw = client(server)
    raw.meta.events.register("before-sign.s3.DeleteObjects", _strip_checksums)
    with pytest.raises(ClientError) as e:
        raw.delete_objects(Bucket="multi-del", Delete={"Objects": [{"Key": "d/e"}]})
    assert code(e) == "InvalidRequest"
    assert requests.get(f"http://127.0.0.1:{server.port}/multi-del", timeout=5).status_code == 403  # anonymous


def _strip_checksums(request: object, **_: object) -> None:
    h = request.headers  # type: ignore[attr-defined]
    for name in [n for n in h if n.lower().startswith("x-amz-checksum-") or n.lower() == "content-md5"]:
        del h[name]


def test_user_metadata(s3: BaseClient) -> None:
    s3.create_bucket(Bucket="meta")
    s3.put_object(Bucket="meta", Key="k", Body=b"", Metadata={"Owner-Team": "ml", "run": "42"},
                  ContentDisposition="attachment", CacheControl="no-cache")
    h = s3.head_object(Bucket="meta", Key="k")
    assert h["Metadata"] == {"owner-team": "ml", "run": "42"}
    assert h["ContentDisposition"] == "attachment" and h["CacheControl"] == "no-cache"
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket="meta", Key="k2", Body=b"x", Metadata={"big": "v" * 2100})
    assert code(e) == "MetadataTooLarge"


def test_stored_checksums_come_back_with_checksum_mode(s3: BaseClient,
                                                       gateway: tuple[Gateway, RunningServer]) -> None:
    """A checksum verified at upload is kept with the object and returned, as RGW (Squid) does, by a
    GET or HEAD with `x-amz-checksum-mode: ENABLED` of the whole object; boto3 then checks the body."""
    s3.create_bucket(Bucket="cksum")
    data = os.urandom((4 << 20) + 5)
    crc = base64.b64encode(zlib.crc32(data).to_bytes(4, "big")).decode()
    sha = base64.b64encode(hashlib.sha256(data).digest()).decode()
    assert s3.put_object(Bucket="cksum", Key="crc", Body=data, ChecksumAlgorithm="CRC32")["ChecksumCRC32"] == crc
    s3.put_object(Bucket="cksum", Key="sha", Body=data, ChecksumAlgorithm="SHA256")
    got = s3.get_object(Bucket="cksum", Key="crc", ChecksumMode="ENABLED")
    assert got["ChecksumCRC32"] == crc and got["Body"].read() == data  # boto3 validated it as it read
    assert s3.head_object(Bucket="cksum", Key="sha", ChecksumMode="ENABLED")["ChecksumSHA256"] == sha
    s3.copy_object(Bucket="cksum", Key="crc-copy", CopySource="cksum/crc")
    assert s3.head_object(Bucket="cksum", Key="crc-copy", ChecksumMode="ENABLED")["ChecksumCRC32"] == crc
    # not asked for, or a range (whose bytes the stored checksum does not cover): none sent
    plain = client(gateway[1], checksums="when_required")
    assert "ChecksumCRC32" not in plain.head_object(Bucket="cksum", Key="crc")
    ranged = s3.get_object(Bucket="cksum", Key="crc", Range="bytes=0-99", ChecksumMode="ENABLED")
    assert "ChecksumCRC32" not in ranged and ranged["Body"].read() == data[:100]
