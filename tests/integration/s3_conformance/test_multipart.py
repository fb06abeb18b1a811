"""Multipart uploads as RGW (Squid) answers them, against the deployed twin: completing with small
parts (ceph/s3-tests test_multipart_upload_small, test_multipart_upload_size_too_small), a part re-sent
whose first upload finishes last (test_multipart_resend_first_finishes_last: the upload that finishes
last is the part), an upload over an existing object (test_multipart_upload_overwrite_existing_object),
and UploadPartCopy ranges (test_multipart_copy_invalid_range, test_multipart_copy_improper_range)."""

from __future__ import annotations

import http.client
from urllib.parse import urlsplit

import pytest
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.client import BaseClient
from botocore.credentials import Credentials
from botocore.exceptions import ClientError

from tests.integration.s3_conformance.s3_twin import ALICE, S3Twin, error

MiB = 1 << 20


@pytest.fixture(scope="module", autouse=True)
def mpu_bucket(twin: S3Twin) -> None:
    twin.client().create_bucket(Bucket="mpu")



def parts(*etags: str) -> dict[str, list[dict[str, object]]]:
    return {"Parts": [{"PartNumber": i, "ETag": e} for i, e in enumerate(etags, 1)]}


def test_one_small_part_completes(s3: BaseClient) -> None:
    up = s3.create_multipart_upload(Bucket="mpu", Key="small")["UploadId"]
    e = s3.upload_part(Bucket="mpu", Key="small", UploadId=up, PartNumber=1, Body=b"x")["ETag"]
    s3.complete_multipart_upload(Bucket="mpu", Key="small", UploadId=up, MultipartUpload=parts(e))
    r = s3.get_object(Bucket="mpu", Key="small")
    assert (r["ContentLength"], r["Body"].read()) == (1, b"x")


def test_small_parts_before_the_last_are_too_small_and_the_upload_stays(s3: BaseClient) -> None:
    up = s3.create_multipart_upload(Bucket="mpu", Key="tiny")["UploadId"]
    e1 = s3.upload_part(Bucket="mpu", Key="tiny", UploadId=up, PartNumber=1, Body=b"a" * 100)["ETag"]
    e2 = s3.upload_part(Bucket="mpu", Key="tiny", UploadId=up, PartNumber=2, Body=b"b")["ETag"]
    with pytest.raises(ClientError) as err:
        s3.complete_multipart_upload(Bucket="mpu", Key="tiny", UploadId=up, MultipartUpload=parts(e1, e2))
    assert error(err) == (400, "EntityTooSmall")
    with pytest.raises(ClientError) as err:
        s3.head_object(Bucket="mpu", Key="tiny")
    assert error(err)[0] == 404  # nothing was written
    assert [p["PartNumber"] for p in s3.list_parts(Bucket="mpu", Key="tiny", UploadId=up)["Parts"]] == [1, 2]
    big = b"a" * (5 * MiB)  # the upload is still there: re-send part 1 big enough and complete it
    e1 = s3.upload_part(Bucket="mpu", Key="tiny", UploadId=up, PartNumber=1, Body=big)["ETag"]
    s3.complete_multipart_upload(Bucket="mpu", Key="tiny", UploadId=up, MultipartUpload=parts(e1, e2))
    assert s3.get_object(Bucket="mpu", Key="tiny")["Body"].read() == big + b"b"


def test_completing_with_no_parts_is_malformed(twin: S3Twin, s3: BaseClient) -> None:
    up = s3.create_multipart_upload(Bucket="mpu", Key="empty")["UploadId"]
    r = twin.signed("POST", f"/mpu/empty?uploadId={up}",
                    body=b"<CompleteMultipartUpload></CompleteMultipartUpload>")
    assert (r.status_code, "<Code>MalformedXML</Code>" in r.text) == (400, True)


def test_resent_part_that_finishes_last_is_the_part(twin: S3Twin, s3: BaseClient) -> None:
    up = s3.create_multipart_upload(Bucket="mpu", Key="resend")["UploadId"]
    a, b = b"A" * 8, b"B" * 8
    # part 1 with A: headers and all but its last byte sent, then part 1 with B uploaded whole, then A ends
    path = f"/mpu/resend?partNumber=1&uploadId={up}"
    req = AWSRequest("PUT", twin.endpoint + path, data=a, headers={"Content-Length": str(len(a))})
    S3SigV4Auth(Credentials(ALICE["access_key"], ALICE["secret_key"]), "s3", "us-east-1").add_auth(req)
    u = urlsplit(twin.endpoint)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    try:
        conn.putrequest("PUT", path, skip_host=True, skip_accept_encoding=True)
        for k, v in {"Host": u.netloc, **dict(req.headers)}.items():
            conn.putheader(k, v)
        conn.endheaders()
        conn.send(a[:-1])
        eb = s3.upload_part(Bucket="mpu", Key="resend", UploadId=up, PartNumber=1, Body=b)["ETag"]
        conn.send(a[-1:])
        ra = conn.getresponse()
        assert ra.status == 200, ra.read()
        ea = ra.getheader("ETag")
    finally:
        conn.close()
    assert ea != eb
    assert [p["ETag"] for p in s3.list_parts(Bucket="mpu", Key="resend", UploadId=up)["Parts"]] == [ea]
    with pytest.raises(ClientError) as err:  # B's upload was replaced by A's
        s3.complete_multipart_upload(Bucket="mpu", Key="resend", UploadId=up, MultipartUpload=parts(eb))
    assert error(err) == (400, "InvalidPart")
    s3.complete_multipart_upload(Bucket="mpu", Key="resend", UploadId=up, MultipartUpload=parts(ea))
    assert s3.get_object(Bucket="mpu", Key="resend")["Body"].read() == a


def test_multipart_over_an_existing_object_replaces_it(s3: BaseClient) -> None:
    s3.put_object(Bucket="mpu", Key="over", Body=b"old")
    up = s3.create_multipart_upload(Bucket="mpu", Key="over")["UploadId"]
    assert s3.get_object(Bucket="mpu", Key="over")["Body"].read() == b"old"  # untouched until completed
    e = s3.upload_part(Bucket="mpu", Key="over", UploadId=up, PartNumber=1, Body=b"new")["ETag"]
    s3.complete_multipart_upload(Bucket="mpu", Key="over", UploadId=up, MultipartUpload=parts(e))
    assert s3.get_object(Bucket="mpu", Key="over")["Body"].read() == b"new"


def test_upload_part_copy_ranges(s3: BaseClient) -> None:
    s3.put_object(Bucket="mpu", Key="source", Body=b"12345")
    up = s3.create_multipart_upload(Bucket="mpu", Key="dest")["UploadId"]
    copy = {"Bucket": "mpu", "Key": "source"}
    with pytest.raises(ClientError) as err:  # past the source's 5 bytes
        s3.upload_part_copy(Bucket="mpu", Key="dest", UploadId=up, PartNumber=1, CopySource=copy,
                            CopySourceRange="bytes=0-21")
    assert error(err) == (416, "InvalidRange")
    for bad in ("0-2", "bytes=0", "bytes=hello-world", "bytes=0-bar", "bytes=hello-", "bytes=0-2,3-5"):
        with pytest.raises(ClientError) as err:
            s3.upload_part_copy(Bucket="mpu", Key="dest", UploadId=up, PartNumber=1, CopySource=copy,
                                CopySourceRange=bad)
        assert error(err) == (400, "InvalidArgument"), bad
    e = s3.upload_part_copy(Bucket="mpu", Key="dest", UploadId=up, PartNumber=1, CopySource=copy,
                            CopySourceRange="bytes=1-3")["CopyPartResult"]["ETag"]
    s3.complete_multipart_upload(Bucket="mpu", Key="dest", UploadId=up, MultipartUpload=parts(e))
    assert s3.get_object(Bucket="mpu", Key="dest")["Body"].read() == b"234"
