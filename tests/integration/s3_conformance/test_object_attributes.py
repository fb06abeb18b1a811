"""GetObjectAttributes as RGW (Tentacle, RGWGetObjAttrs) answers it, against the deployed twin: each
attribute alone and all together (ceph/s3-tests test_get_object_attributes*), the checksums stored
from an upload with ChecksumAlgorithm, a multipart object's parts paged by x-amz-max-parts and
x-amz-part-number-marker, a version named by versionId, a delete marker, a missing key, what boto3
does not show (the document itself, a request without x-amz-object-attributes, a bad header), and
who may ask (s3:GetObject, or failing it s3:GetObjectAttributes), and the AWS CLI's
`s3api get-object-attributes`."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
import zlib
from pathlib import Path

import pytest
from botocore.client import BaseClient
from botocore.exceptions import ClientError

from tests.integration.s3_conformance.s3_twin import ALICE, BOB, S3Twin, error

MiB = 1 << 20
B, V = "attrs-b", "attrs-v"
ALL = ["ETag", "Checksum", "ObjectParts", "StorageClass", "ObjectSize"]
BODY = b"attributes of a small object\n"
# what the response holds besides the attributes
META = {"ResponseMetadata", "LastModified", "VersionId", "DeleteMarker", "RequestCharged"}


@pytest.fixture(scope="module", autouse=True)
def buckets(twin: S3Twin) -> None:
    s3 = twin.client()
    s3.create_bucket(Bucket=B)
    s3.put_object(Bucket=B, Key="small", Body=BODY, ChecksumAlgorithm="CRC32")
    s3.create_bucket(Bucket=V)
    s3.put_bucket_versioning(Bucket=V, VersioningConfiguration={"Status": "Enabled"})


@pytest.fixture(scope="module")
def mpu(twin: S3Twin) -> dict[str, object]:
    """A three-part object uploaded with SHA256 checksums: what the upload answered."""
    s3 = twin.client()
    up = s3.create_multipart_upload(Bucket=B, Key="mpu", ChecksumAlgorithm="SHA256")["UploadId"]
    bodies = [b"a" * (5 * MiB), b"b" * (5 * MiB), b"tail"]
    parts = []
    for n, body in enumerate(bodies, 1):
        r = s3.upload_part(Bucket=B, Key="mpu", UploadId=up, PartNumber=n, Body=body, ChecksumAlgorithm="SHA256")
        parts.append({"PartNumber": n, "ETag": r["ETag"], "ChecksumSHA256": r["ChecksumSHA256"]})
    done = s3.complete_multipart_upload(Bucket=B, Key="mpu", UploadId=up, MultipartUpload={"Parts": parts})
    return {"parts": parts, "sizes": [len(b) for b in bodies], "etag": done["ETag"],
            "checksum": done["ChecksumSHA256"]}


def attributes(r: dict[str, object]) -> set[str]:
    return set(r) - META


def crc32(data: bytes) -> str:
    return base64.b64encode(zlib.crc32(data).to_bytes(4, "big")).decode()


@pytest.mark.parametrize("name", ALL)
def test_each_attribute_alone_is_all_the_answer_holds(s3: BaseClient, name: str) -> None:
    r = s3.get_object_attributes(Bucket=B, Key="small", ObjectAttributes=[name])
    # ObjectParts is there for an object uploaded in parts only
    assert attributes(r) == (set() if name == "ObjectParts" else {name})


def test_all_attributes_of_a_single_part_object(s3: BaseClient) -> None:
    r = s3.get_object_attributes(Bucket=B, Key="small", ObjectAttributes=ALL)
    head = s3.head_object(Bucket=B, Key="small")
    assert r["ETag"] == hashlib.md5(BODY).hexdigest() == head["ETag"].strip('"')  # unquoted
    assert r["ObjectSize"] == len(BODY)
    assert r["StorageClass"] == "STANDARD"
    assert r["Checksum"] == {"ChecksumCRC32": crc32(BODY)}  # as stored at upload
    assert "ObjectParts" not in r
    assert r["LastModified"] == head["LastModified"]
    assert "VersionId" not in r  # the bucket never had versioning


def test_a_multipart_objects_checksum_and_parts(s3: BaseClient, mpu: dict) -> None:
    r = s3.get_object_attributes(Bucket=B, Key="mpu", ObjectAttributes=ALL)
    assert r["ETag"] == mpu["etag"].strip('"') and r["ETag"].endswith("-3")
    assert r["ObjectSize"] == sum(mpu["sizes"])
    assert r["Checksum"] == {"ChecksumSHA256": mpu["checksum"], "ChecksumType": "COMPOSITE"}
    op = r["ObjectParts"]
    assert (op["TotalPartsCount"], op["IsTruncated"]) == (3, False)
    assert op["Parts"] == [{"PartNumber": p["PartNumber"], "Size": size, "ChecksumSHA256": p["ChecksumSHA256"]}
                           for p, size in zip(mpu["parts"], mpu["sizes"], strict=True)]


def test_a_multipart_objects_parts_page_by_max_parts_and_marker(s3: BaseClient, mpu: dict) -> None:
    first = s3.get_object_attributes(Bucket=B, Key="mpu", ObjectAttributes=["ObjectParts"], MaxParts=2)["ObjectParts"]
    assert [p["PartNumber"] for p in first["Parts"]] == [1, 2]
    assert (first["IsTruncated"], first["MaxParts"], first["NextPartNumberMarker"]) == (True, 2, 2)
    assert first["TotalPartsCount"] == 3
    rest = s3.get_object_attributes(Bucket=B, Key="mpu", ObjectAttributes=["ObjectParts"], MaxParts=2,
                                    PartNumberMarker=first["NextPartNumberMarker"])["ObjectParts"]
    assert [(p["PartNumber"], p["Size"]) for p in rest["Parts"]] == [(3, mpu["sizes"][2])]
    assert (rest["IsTruncated"], rest["PartNumberMarker"], "NextPartNumberMarker" in rest) == (False, 2, False)
    past = s3.get_object_attributes(Bucket=B, Key="mpu", ObjectAttributes=["ObjectParts"],
                                    PartNumberMarker=3)["ObjectParts"]
    assert (past.get("Parts", []), past["IsTruncated"]) == ([], False)


def test_a_version_by_its_id_and_the_latest_without_one(s3: BaseClient) -> None:
    v1 = s3.put_object(Bucket=V, Key="k", Body=b"one")["VersionId"]
    v2 = s3.put_object(Bucket=V, Key="k", Body=b"version two")["VersionId"]
    old = s3.get_object_attributes(Bucket=V, Key="k", VersionId=v1, ObjectAttributes=["ETag", "ObjectSize"])
    assert (old["VersionId"], old["ETag"], old["ObjectSize"]) == (v1, hashlib.md5(b"one").hexdigest(), 3)
    new = s3.get_object_attributes(Bucket=V, Key="k", ObjectAttributes=["ObjectSize"])
    assert (new["VersionId"], new["ObjectSize"]) == (v2, 11)


def test_a_delete_marker_is_no_object_and_no_version_to_describe(s3: BaseClient) -> None:
    s3.put_object(Bucket=V, Key="gone", Body=b"x")
    marker = s3.delete_object(Bucket=V, Key="gone")["VersionId"]
    with pytest.raises(ClientError) as err:
        s3.get_object_attributes(Bucket=V, Key="gone", ObjectAttributes=["ETag"])
    assert error(err) == (404, "NoSuchKey")
    hdrs = err.value.response["ResponseMetadata"]["HTTPHeaders"]
    assert (hdrs.get("x-amz-delete-marker"), hdrs.get("x-amz-version-id")) == ("true", marker)
    with pytest.raises(ClientError) as err:
        s3.get_object_attributes(Bucket=V, Key="gone", VersionId=marker, ObjectAttributes=["ETag"])
    assert error(err) == (405, "MethodNotAllowed")


def test_a_missing_key_version_or_bucket(s3: BaseClient) -> None:
    with pytest.raises(ClientError) as err:
        s3.get_object_attributes(Bucket=B, Key="no-such-key", ObjectAttributes=["ETag"])
    assert error(err) == (404, "NoSuchKey")
    with pytest.raises(ClientError) as err:
        s3.get_object_attributes(Bucket=V, Key="k", VersionId="x" * 32, ObjectAttributes=["ETag"])
    assert error(err) == (404, "NoSuchVersion")
    with pytest.raises(ClientError) as err:
        s3.get_object_attributes(Bucket="attrs-no-such-bucket", Key="k", ObjectAttributes=["ETag"])
    assert error(err) == (404, "NoSuchBucket")


def test_the_document_as_rgw_writes_it(twin: S3Twin) -> None:
    """Root GetObjectAttributes outside any namespace, RGW's element order, names compared case-blind."""
    r = twin.signed("GET", f"/{B}/small?attributes",
                    headers={"x-amz-object-attributes": "storageclass,OBJECTSIZE,ETag,nonsense"})
    assert r.status_code == 200, r.text
    doc = ET.fromstring(r.content)
    assert doc.tag == "GetObjectAttributes"
    assert [(c.tag, c.text) for c in doc] == [("ETag", hashlib.md5(BODY).hexdigest()),
                                              ("ObjectSize", str(len(BODY))), ("StorageClass", "STANDARD")]
    assert r.headers["Content-Type"] == "application/xml" and "Last-Modified" in r.headers


def test_without_the_header_nothing_is_described(twin: S3Twin) -> None:
    r = twin.signed("GET", f"/{B}/small?attributes")
    assert r.status_code == 200, r.text
    assert list(ET.fromstring(r.content)) == []


def test_a_bad_max_parts_is_an_invalid_part_after_the_key_is_found(twin: S3Twin) -> None:
    bad = {"x-amz-object-attributes": "ObjectParts", "x-amz-max-parts": "many"}
    r = twin.signed("GET", f"/{B}/mpu-or-not?attributes", headers=bad)
    assert (r.status_code, ET.fromstring(r.content).findtext("Code")) == (404, "NoSuchKey")
    r = twin.signed("GET", f"/{B}/small?attributes", headers=bad)
    doc = ET.fromstring(r.content)
    assert (r.status_code, doc.findtext("Code")) == (400, "InvalidPart")
    assert "MaxParts" in (doc.findtext("Message") or "")


def test_head_with_attributes_is_refused(twin: S3Twin) -> None:
    """RGW takes it for a HeadObject; the twin serves no HEAD it was not asked for (routes.py)."""
    assert twin.signed("HEAD", f"/{B}/small?attributes").status_code == 501


def test_who_may_ask(twin: S3Twin, s3: BaseClient) -> None:
    """s3:GetObject, or failing it s3:GetObjectAttributes (RGWGetObjAttrs::verify_permission)."""
    bucket = "attrs-policy"
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="k", Body=b"for bob")
    bob = twin.client(BOB)
    with pytest.raises(ClientError) as err:
        bob.get_object_attributes(Bucket=bucket, Key="k", ObjectAttributes=["ObjectSize"])
    assert error(err) == (403, "AccessDenied")
    s3.put_bucket_policy(Bucket=bucket, Policy=json.dumps({"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"AWS": [f"arn:aws:iam:::user/{BOB['uid']}"]},
        "Action": "s3:GetObjectAttributes", "Resource": f"arn:aws:s3:::{bucket}/*"}]}))
    assert bob.get_object_attributes(Bucket=bucket, Key="k", ObjectAttributes=["ObjectSize"])["ObjectSize"] == 7
    with pytest.raises(ClientError) as err:  # the attributes, not the data
        bob.get_object(Bucket=bucket, Key="k")
    assert error(err) == (403, "AccessDenied")


AWS = Path(sys.executable).parent / "aws"


@pytest.mark.skipif(not AWS.exists(), reason=f"{AWS} missing (`make install` installs awscli)")
def test_the_aws_cli_reads_the_attributes(twin: S3Twin, tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.write_text("[default]\nregion = us-east-1\noutput = json\ns3 =\n  addressing_style = path\n")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path), "AWS_CONFIG_FILE": str(config),
           "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "credentials"), "AWS_ACCESS_KEY_ID": ALICE["access_key"],
           "AWS_SECRET_ACCESS_KEY": ALICE["secret_key"], "AWS_MAX_ATTEMPTS": "1", "AWS_PAGER": ""}
    r = subprocess.run([str(AWS), "--endpoint-url", twin.endpoint, "s3api", "get-object-attributes", "--bucket", B,
                        "--key", "small", "--object-attributes", "ETag", "ObjectSize", "Checksum"],
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert (out["ETag"], out["ObjectSize"], out["Checksum"]) == (
        hashlib.md5(BODY).hexdigest(), len(BODY), {"ChecksumCRC32": crc32(BODY)})
