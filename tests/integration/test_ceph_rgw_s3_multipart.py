"""Real boto3 multipart uploads against the RGW gateway: every part through the EC pool, Ceph's ETag
rule, S3's refusals (which must change nothing), listing, abort, UploadPartCopy and upload_file."""

from __future__ import annotations

import base64
import hashlib
import os
import zlib
from pathlib import Path

import boto3
import pytest
from boto3.s3.transfer import TransferConfig
from botocore.client import BaseClient
from botocore.config import Config
from botocore.exceptions import ClientError

from services.ceph.rgw.cluster_setup import DATA_POOL
from services.ceph.rgw.gateway import Gateway
from services.ceph.rgw.http import RunningServer
from tests.integration import test_ceph_rgw_s3 as base
from tests.integration.test_ceph_rgw_s3 import ALICE, code

MiB = 1 << 20

gateway = base.gateway  # the shared fixtures: one gateway and client per test module
s3 = base.s3


def _data_objects(gw: Gateway) -> int:
    return sum(u.objects for u in gw.cluster.usage() if u.pool.name == DATA_POOL)


def test_multipart_lifecycle_and_refusals(gateway: tuple[Gateway, RunningServer], s3: BaseClient) -> None:
    gw, _ = gateway
    s3.create_bucket(Bucket="mpu")
    base = _data_objects(gw)
    up = s3.create_multipart_upload(Bucket="mpu", Key="big.bin", ContentType="application/x-ckpt",
                                    Metadata={"step": "7"})["UploadId"]
    p1, p2, p3 = os.urandom(5 * MiB), os.urandom(6 * MiB + 3), os.urandom(100)
    e1 = s3.upload_part(Bucket="mpu", Key="big.bin", UploadId=up, PartNumber=1, Body=p1)["ETag"]
    e2 = s3.upload_part(Bucket="mpu", Key="big.bin", UploadId=up, PartNumber=2, Body=p2)["ETag"]
    e3 = s3.upload_part(Bucket="mpu", Key="big.bin", UploadId=up, PartNumber=3, Body=p3)["ETag"]
    assert e1 == f'"{hashlib.md5(p1).hexdigest()}"'
    assert _data_objects(gw) == base + 2 + 2 + 1  # each part striped into 4 MiB RADOS objects
    for bad in (0, 10001):
        with pytest.raises(ClientError) as e:
            s3.upload_part(Bucket="mpu", Key="big.bin", UploadId=up, PartNumber=bad, Body=b"x")
        assert code(e) == "InvalidArgument"
    parts = s3.list_parts(Bucket="mpu", Key="big.bin", UploadId=up)
    assert [(p["PartNumber"], p["Size"], p["ETag"]) for p in parts["Parts"]] == [
        (1, len(p1), e1), (2, len(p2), e2), (3, len(p3), e3)]
    page = s3.list_parts(Bucket="mpu", Key="big.bin", UploadId=up, MaxParts=2)
    assert page["IsTruncated"] and page["NextPartNumberMarker"] == 2
    assert [u["UploadId"] for u in s3.list_multipart_uploads(Bucket="mpu")["Uploads"]] == [up]

    def complete(parts: list[tuple[int, str]], upload: str = up) -> dict:  # type: ignore[type-arg]
        return s3.complete_multipart_upload(Bucket="mpu", Key="big.bin", UploadId=upload, MultipartUpload={
            "Parts": [{"PartNumber": n, "ETag": t} for n, t in parts]})

    for parts_list, want in (([(2, e2), (1, e1)], "InvalidPartOrder"), ([(1, e1), (2, e1)], "InvalidPart"),
                             ([(1, e1), (4, e2)], "InvalidPart"), ([(3, e3), (4, e1)], "InvalidPart")):
        with pytest.raises(ClientError) as e:
            complete(parts_list)
        assert code(e) == want
    small = s3.create_multipart_upload(Bucket="mpu", Key="small")["UploadId"]
    t1 = s3.upload_part(Bucket="mpu", Key="small", UploadId=small, PartNumber=1, Body=b"a" * 100)["ETag"]
    t2 = s3.upload_part(Bucket="mpu", Key="small", UploadId=small, PartNumber=2, Body=b"b")["ETag"]
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(Bucket="mpu", Key="small", UploadId=small, MultipartUpload={
            "Parts": [{"PartNumber": 1, "ETag": t1}, {"PartNumber": 2, "ETag": t2}]})
    assert code(e) == "EntityTooSmall"
    s3.abort_multipart_upload(Bucket="mpu", Key="small", UploadId=small)
    with pytest.raises(ClientError) as e:
        s3.list_parts(Bucket="mpu", Key="small", UploadId=small)
    assert code(e) == "NoSuchUpload"
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket="mpu", Key="big.bin")
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404  # refusals changed nothing
    assert len(s3.list_parts(Bucket="mpu", Key="big.bin", UploadId=up)["Parts"]) == 3

    done = complete([(1, e1), (2, e2), (3, e3)])
    md5s = b"".join(hashlib.md5(p).digest() for p in (p1, p2, p3))
    assert done["ETag"] == f'"{hashlib.md5(md5s).hexdigest()}-3"'
    got = s3.get_object(Bucket="mpu", Key="big.bin")
    assert got["Body"].read() == p1 + p2 + p3
    assert got["ContentType"] == "application/x-ckpt" and got["Metadata"] == {"step": "7"}
    lo, hi = 5 * MiB - 5, 11 * MiB + 10  # across parts 1 → 2 → 3
    rng = s3.get_object(Bucket="mpu", Key="big.bin", Range=f"bytes={lo}-{hi}")["Body"].read()
    assert rng == (p1 + p2 + p3)[lo: hi + 1]
    with pytest.raises(ClientError) as e:
        complete([(1, e1)])
    assert code(e) == "NoSuchUpload"
    assert s3.list_multipart_uploads(Bucket="mpu").get("Uploads", []) == []
    assert _data_objects(gw) == base + 1 + 5  # the manifest head + the parts' RADOS objects, nothing freed twice


def test_completion_frees_unnamed_parts_and_abort_frees_all(gateway: tuple[Gateway, RunningServer],
                                                            s3: BaseClient) -> None:
    gw, _ = gateway
    s3.create_bucket(Bucket="mpu-free")
    base = _data_objects(gw)
    up = s3.create_multipart_upload(Bucket="mpu-free", Key="k")["UploadId"]
    e1 = s3.upload_part(Bucket="mpu-free", Key="k", UploadId=up, PartNumber=1, Body=b"1" * 10)["ETag"]
    s3.upload_part(Bucket="mpu-free", Key="k", UploadId=up, PartNumber=2, Body=b"2" * 10)
    e1b = s3.upload_part(Bucket="mpu-free", Key="k", UploadId=up, PartNumber=1, Body=b"one")["ETag"]  # re-sent
    assert e1b != e1 and _data_objects(gw) == base + 2
    s3.complete_multipart_upload(Bucket="mpu-free", Key="k", UploadId=up,
                                 MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e1b}]})
    assert s3.get_object(Bucket="mpu-free", Key="k")["Body"].read() == b"one"
    assert _data_objects(gw) == base + 2  # head + part 1; part 2 freed
    up2 = s3.create_multipart_upload(Bucket="mpu-free", Key="gone")["UploadId"]
    s3.upload_part(Bucket="mpu-free", Key="gone", UploadId=up2, PartNumber=1, Body=b"x" * 1000)
    s3.abort_multipart_upload(Bucket="mpu-free", Key="gone", UploadId=up2)
    assert _data_objects(gw) == base + 2
    with pytest.raises(ClientError) as e:
        s3.abort_multipart_upload(Bucket="mpu-free", Key="gone", UploadId=up2)
    assert code(e) == "NoSuchUpload"


def test_upload_file_and_part_copy(s3: BaseClient, tmp_path: Path) -> None:
    s3.create_bucket(Bucket="mpu-file")
    src = tmp_path / "ckpt.bin"
    data = os.urandom(13 * MiB + 17)
    src.write_bytes(data)
    cfg = TransferConfig(multipart_threshold=5 * MiB, multipart_chunksize=5 * MiB, max_concurrency=4)
    s3.upload_file(str(src), "mpu-file", "ckpt.bin", Config=cfg)
    head = s3.head_object(Bucket="mpu-file", Key="ckpt.bin")
    assert head["ETag"].endswith('-3"') and head["ContentLength"] == len(data)
    out = tmp_path / "back.bin"
    s3.download_file("mpu-file", "ckpt.bin", str(out), Config=cfg)
    assert out.read_bytes() == data

    up = s3.create_multipart_upload(Bucket="mpu-file", Key="copy")["UploadId"]
    c1 = s3.upload_part_copy(Bucket="mpu-file", Key="copy", UploadId=up, PartNumber=1,
                             CopySource={"Bucket": "mpu-file", "Key": "ckpt.bin"},
                             CopySourceRange=f"bytes=0-{5 * MiB - 1}")
    c2 = s3.upload_part_copy(Bucket="mpu-file", Key="copy", UploadId=up, PartNumber=2,
                             CopySource={"Bucket": "mpu-file", "Key": "ckpt.bin"},
                             CopySourceRange=f"bytes={10 * MiB}-{len(data) - 1}")
    with pytest.raises(ClientError) as e:
        s3.upload_part_copy(Bucket="mpu-file", Key="copy", UploadId=up, PartNumber=3,
                            CopySource={"Bucket": "mpu-file", "Key": "ckpt.bin"},
                            CopySourceRange=f"bytes=0-{len(data)}")
    assert code(e) == "InvalidRange"  # past the source's end: RGW's ERANGE
    s3.complete_multipart_upload(Bucket="mpu-file", Key="copy", UploadId=up, MultipartUpload={"Parts": [
        {"PartNumber": 1, "ETag": c1["CopyPartResult"]["ETag"]},
        {"PartNumber": 2, "ETag": c2["CopyPartResult"]["ETag"]}]})
    assert s3.get_object(Bucket="mpu-file", Key="copy")["Body"].read() == data[:5 * MiB] + data[10 * MiB:]


def _crc32(data: bytes) -> bytes:
    return zlib.crc32(data).to_bytes(4, "big")


def test_composite_checksums(gateway: tuple[Gateway, RunningServer], s3: BaseClient, tmp_path: Path) -> None:
    """An upload initiated with ChecksumAlgorithm (boto3's upload_file does so with CRC32) gets S3's
    COMPOSITE checksum: CRC32 over the parts' binary CRC32s, then -N; bad completions change nothing."""
    gw, _ = gateway
    s3.create_bucket(Bucket="mpu-cks")
    src = tmp_path / "ckpt.bin"
    data = os.urandom(11 * MiB + 5)
    src.write_bytes(data)
    s3.upload_file(str(src), "mpu-cks", "auto", Config=TransferConfig(multipart_threshold=5 * MiB,
                                                                       multipart_chunksize=5 * MiB))
    chunks = [data[:5 * MiB], data[5 * MiB:10 * MiB], data[10 * MiB:]]
    want = base64.b64encode(_crc32(b"".join(_crc32(c) for c in chunks))).decode() + "-3"
    head = s3.head_object(Bucket="mpu-cks", Key="auto", ChecksumMode="ENABLED")
    assert (head["ChecksumCRC32"], head["ChecksumType"]) == (want, "COMPOSITE")
    got = s3.get_object(Bucket="mpu-cks", Key="auto", ChecksumMode="ENABLED")  # boto3 skips validating "-N"
    assert got["ChecksumCRC32"] == want and got["Body"].read() == data
    assert "ChecksumCRC32" not in s3.head_object(Bucket="mpu-cks", Key="auto")  # only when asked

    up = s3.create_multipart_upload(Bucket="mpu-cks", Key="k", ChecksumAlgorithm="CRC32")
    assert (up["ChecksumAlgorithm"], up["ChecksumType"]) == ("CRC32", "COMPOSITE")
    uid = up["UploadId"]
    assert [u.get("ChecksumAlgorithm") for u in s3.list_multipart_uploads(Bucket="mpu-cks")["Uploads"]] == ["CRC32"]
    p1 = s3.upload_part(Bucket="mpu-cks", Key="k", UploadId=uid, PartNumber=1, Body=chunks[0],
                        ChecksumAlgorithm="CRC32")
    assert p1["ChecksumCRC32"] == base64.b64encode(_crc32(chunks[0])).decode()
    with pytest.raises(ClientError) as e:  # another algorithm than the upload's: refused, nothing stored
        s3.upload_part(Bucket="mpu-cks", Key="k", UploadId=uid, PartNumber=2, Body=chunks[2],
                       ChecksumAlgorithm="SHA1")
    assert code(e) == "InvalidRequest" and "expected checksum Type: crc32" in str(e.value)
    # A part sent without any checksum: the gateway takes the part's CRC32 itself, and returns it.
    bare = boto3.client("s3", endpoint_url=s3.meta.endpoint_url, region_name="us-east-1",
                        aws_access_key_id=ALICE.access_key, aws_secret_access_key=ALICE.secret_key,
                        config=Config(s3={"addressing_style": "path"}, request_checksum_calculation="when_required"))
    sent: list[str] = []
    bare.meta.events.register("before-send.s3.UploadPart",
                              lambda request, **_: sent.extend(k.lower() for k in request.headers))
    p2 = bare.upload_part(Bucket="mpu-cks", Key="k", UploadId=uid, PartNumber=2, Body=chunks[1])
    assert not [h for h in sent if "checksum" in h]
    assert p2["ChecksumCRC32"] == base64.b64encode(_crc32(chunks[1])).decode()
    p3 = s3.upload_part_copy(Bucket="mpu-cks", Key="k", UploadId=uid, PartNumber=3,
                             CopySource={"Bucket": "mpu-cks", "Key": "auto"},
                             CopySourceRange=f"bytes={10 * MiB}-{len(data) - 1}")
    p3 = {"ETag": p3["CopyPartResult"]["ETag"], "ChecksumCRC32": p3["CopyPartResult"]["ChecksumCRC32"]}
    assert p3["ChecksumCRC32"] == base64.b64encode(_crc32(chunks[2])).decode()
    parts = s3.list_parts(Bucket="mpu-cks", Key="k", UploadId=uid)
    assert parts["ChecksumAlgorithm"] == "CRC32"
    assert [(p["PartNumber"], p["ChecksumCRC32"]) for p in parts["Parts"]] == [
        (1, p1["ChecksumCRC32"]), (2, p2["ChecksumCRC32"]), (3, p3["ChecksumCRC32"])]

    named = [{"PartNumber": n, "ETag": p["ETag"], "ChecksumCRC32": p["ChecksumCRC32"]}
             for n, p in ((1, p1), (2, p2), (3, p3))]
    del named[1]["ChecksumCRC32"]
    with pytest.raises(ClientError) as e:  # a part's checksum missing from the completion
        s3.complete_multipart_upload(Bucket="mpu-cks", Key="k", UploadId=uid, MultipartUpload={"Parts": named})
    assert code(e) == "InvalidRequest" and "missing for part 2" in str(e.value)
    named[1]["ChecksumCRC32"] = p1["ChecksumCRC32"]  # the wrong one
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(Bucket="mpu-cks", Key="k", UploadId=uid, MultipartUpload={"Parts": named})
    assert code(e) == "InvalidPart"
    named[1]["ChecksumCRC32"] = p2["ChecksumCRC32"]
    done = s3.complete_multipart_upload(Bucket="mpu-cks", Key="k", UploadId=uid, MultipartUpload={"Parts": named})
    assert want == done["ChecksumCRC32"] and done["ChecksumType"] == "COMPOSITE"  # same parts as upload_file's
    assert s3.get_object(Bucket="mpu-cks", Key="k")["Body"].read() == data
    assert s3.head_object(Bucket="mpu-cks", Key="k", ChecksumMode="ENABLED")["ChecksumCRC32"] == want

    with pytest.raises(ClientError) as e:  # FULL_OBJECT multipart checksums came after Squid
        s3.create_multipart_upload(Bucket="mpu-cks", Key="f", ChecksumAlgorithm="CRC32", ChecksumType="FULL_OBJECT")
    assert code(e) == "InvalidRequest" and "FULL_OBJECT" in str(e.value)
    assert "Uploads" not in s3.list_multipart_uploads(Bucket="mpu-cks")


def test_get_and_head_by_part_number(s3: BaseClient) -> None:
    """GetObject/HeadObject ?partNumber (the AWS Java SDK's multipart download): that part's bytes,
    206 with its Content-Range and PartsCount; an object not uploaded in parts is one part."""
    s3.create_bucket(Bucket="mpu-parts")
    p1, p2 = os.urandom(5 * MiB), os.urandom(1234)
    up = s3.create_multipart_upload(Bucket="mpu-parts", Key="k")["UploadId"]
    named = [{"PartNumber": n, "ETag": s3.upload_part(Bucket="mpu-parts", Key="k", UploadId=up, PartNumber=n,
                                                      Body=body)["ETag"]} for n, body in ((1, p1), (2, p2))]
    etag = s3.complete_multipart_upload(Bucket="mpu-parts", Key="k", UploadId=up,
                                        MultipartUpload={"Parts": named})["ETag"]
    got = s3.get_object(Bucket="mpu-parts", Key="k", PartNumber=2)
    assert got["ResponseMetadata"]["HTTPStatusCode"] == 206 and got["Body"].read() == p2
    assert (got["PartsCount"], got["ETag"]) == (2, etag)
    assert got["ContentRange"] == f"bytes {5 * MiB}-{5 * MiB + 1233}/{5 * MiB + 1234}"
    head = s3.head_object(Bucket="mpu-parts", Key="k", PartNumber=1)
    assert (head["ContentLength"], head["PartsCount"]) == (5 * MiB, 2)
    assert "PartsCount" not in s3.head_object(Bucket="mpu-parts", Key="k")  # only when a part is asked for
    for kw, err in (({"PartNumber": 3}, "InvalidPart"), ({"PartNumber": 10001}, "InvalidArgument"),
                    ({"PartNumber": 1, "Range": "bytes=0-9"}, "InvalidRequest")):
        with pytest.raises(ClientError) as e:
            s3.get_object(Bucket="mpu-parts", Key="k", **kw)
        assert code(e) == err, kw

    s3.put_object(Bucket="mpu-parts", Key="single", Body=b"one piece")
    whole = s3.get_object(Bucket="mpu-parts", Key="single", PartNumber=1)
    assert whole["Body"].read() == b"one piece" and "PartsCount" not in whole
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket="mpu-parts", Key="single", PartNumber=2)
    assert code(e) == "InvalidPart"
