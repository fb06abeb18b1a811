"""Bucket encryption and server-side encryption of writes as RGW (Squid) answers them with no KMS and no
SSE-S3 backend configured (its defaults: rgw_crypt_sse_s3_backend=vault without a vault,
rgw_crypt_s3_kms_backend=barbican without one, rgw_crypt_require_ssl=true), against the deployed twin
over plain HTTP: the configuration is stored and served, and every write that would have to encrypt
is refused before anything is written (services/ceph/rgw/encryption.py says where in RGW)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
from botocore.client import BaseClient
from botocore.exceptions import ClientError

from tests.integration.s3_conformance.s3_twin import S3Twin, error

SSE_S3 = {"Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]}
MISSING = (404, "ServerSideEncryptionConfigurationNotFoundError")
SSE_KMS = {"Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": "key-1"},
                      "BucketKeyEnabled": True}]}


def refused(fn, **kw: object) -> tuple[int, str]:  # type: ignore[no-untyped-def]
    with pytest.raises(ClientError) as e:
        fn(**kw)
    return error(e)


def keys(s3: BaseClient, bucket: str) -> list[str]:
    return [o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])]


def test_put_get_delete_bucket_encryption(s3: BaseClient) -> None:
    s3.create_bucket(Bucket="enc-crud")
    assert refused(s3.get_bucket_encryption, Bucket="enc-crud") == MISSING
    s3.put_bucket_encryption(Bucket="enc-crud", ServerSideEncryptionConfiguration=SSE_S3)
    assert s3.get_bucket_encryption(Bucket="enc-crud")["ServerSideEncryptionConfiguration"] == SSE_S3
    s3.put_bucket_encryption(Bucket="enc-crud", ServerSideEncryptionConfiguration=SSE_KMS)  # no KMS needed to store
    assert s3.get_bucket_encryption(Bucket="enc-crud")["ServerSideEncryptionConfiguration"] == SSE_KMS
    assert s3.delete_bucket_encryption(Bucket="enc-crud")["ResponseMetadata"]["HTTPStatusCode"] == 204
    assert refused(s3.get_bucket_encryption, Bucket="enc-crud") == MISSING
    assert s3.delete_bucket_encryption(Bucket="enc-crud")["ResponseMetadata"]["HTTPStatusCode"] == 204


def test_malformed_configuration_is_refused(twin: S3Twin, s3: BaseClient) -> None:
    s3.create_bucket(Bucket="enc-malformed")
    for body in (b"<ServerSideEncryptionConfiguration><Rule>", b"<EncryptionConfiguration/>",
                 b"<ServerSideEncryptionConfiguration><Rule><BucketKeyEnabled>maybe</BucketKeyEnabled></Rule>"
                 b"</ServerSideEncryptionConfiguration>"):
        r = twin.signed("PUT", "/enc-malformed?encryption", body=body)
        assert r.status_code == 400 and ET.fromstring(r.content).findtext("Code") == "MalformedXML", r.content
    assert refused(s3.get_bucket_encryption, Bucket="enc-malformed") == MISSING


def test_sse_s3_writes_are_refused_without_a_backend(twin: S3Twin, s3: BaseClient) -> None:
    """RGW must create the bucket's key in vault first, and there is none: -EINVAL, 400 InvalidArgument."""
    b = "enc-object"
    s3.create_bucket(Bucket=b)
    s3.put_object(Bucket=b, Key="src", Body=b"plain")
    assert refused(s3.put_object, Bucket=b, Key="sse", Body=b"x", ServerSideEncryption="AES256") \
        == (400, "InvalidArgument")
    assert refused(s3.create_multipart_upload, Bucket=b, Key="mp", ServerSideEncryption="AES256") \
        == (400, "InvalidArgument")
    assert refused(s3.copy_object, Bucket=b, Key="copy", CopySource=f"{b}/src", ServerSideEncryption="AES256") \
        == (400, "InvalidArgument")
    assert keys(s3, b) == ["src"] and s3.list_multipart_uploads(Bucket=b).get("Uploads", []) == []
    r = twin.signed("PUT", f"/{b}/raw", headers={"x-amz-server-side-encryption": "AES256"}, body=b"x")
    doc = ET.fromstring(r.content)  # RGW sets no message for it, and sends none
    assert r.status_code == 400 and doc.findtext("Code") == "InvalidArgument" and doc.find("Message") is None, r.content
    assert refused(s3.put_object, Bucket=b, Key="sse", Body=b"x", ServerSideEncryption="AES128") \
        == (400, "InvalidArgument")
    assert keys(s3, b) == ["src"]


def test_kms_writes_over_plain_http_are_refused(s3: BaseClient) -> None:
    b = "enc-kms"
    s3.create_bucket(Bucket=b)
    assert refused(s3.put_object, Bucket=b, Key="k", Body=b"x", ServerSideEncryption="aws:kms",
                   SSEKMSKeyId="key-1") == (400, "InvalidRequest")  # rgw_crypt_require_ssl
    assert refused(s3.put_object, Bucket=b, Key="k", Body=b"x", SSECustomerAlgorithm="AES256",
                   SSECustomerKey="k" * 32) == (400, "InvalidRequest")
    s3.put_bucket_encryption(Bucket=b, ServerSideEncryptionConfiguration=SSE_KMS)
    assert refused(s3.put_object, Bucket=b, Key="k", Body=b"x") == (400, "InvalidRequest")
    assert keys(s3, b) == []


def test_a_bucket_with_default_sse_s3_refuses_uploads(s3: BaseClient) -> None:
    b = "enc-default"
    s3.create_bucket(Bucket=b)
    s3.put_object(Bucket=b, Key="before", Body=b"before")
    s3.put_bucket_encryption(Bucket=b, ServerSideEncryptionConfiguration=SSE_S3)
    assert refused(s3.put_object, Bucket=b, Key="after", Body=b"after") == (400, "InvalidArgument")
    assert refused(s3.create_multipart_upload, Bucket=b, Key="mp") == (400, "InvalidArgument")
    assert refused(s3.copy_object, Bucket=b, Key="copy", CopySource=f"{b}/before") == (400, "InvalidArgument")
    assert s3.get_object(Bucket=b, Key="before")["Body"].read() == b"before"  # reads are not encryption's
    assert keys(s3, b) == ["before"]
    s3.delete_object(Bucket=b, Key="before")
    s3.delete_bucket_encryption(Bucket=b)
    s3.put_object(Bucket=b, Key="after", Body=b"after")
    assert "ServerSideEncryption" not in s3.head_object(Bucket=b, Key="after")  # stored as it came
    assert keys(s3, b) == ["after"]


def test_a_read_may_not_ask_for_encryption(twin: S3Twin, s3: BaseClient) -> None:
    s3.create_bucket(Bucket="enc-read")
    s3.put_object(Bucket="enc-read", Key="k", Body=b"k")
    for method in ("GET", "HEAD"):
        r = twin.signed(method, "/enc-read/k", headers={"x-amz-server-side-encryption": "AES256"})
        assert r.status_code == 400, (method, r.status_code)
    assert ET.fromstring(twin.signed("GET", "/enc-read/k", headers={"x-amz-server-side-encryption": "AES256"})
                         .content).findtext("Code") == "InvalidRequest"
    assert twin.signed("GET", "/enc-read/k").content == b"k"
    # the object is looked up first, as RGW decides on decryption once it has read the object
    sse = {"x-amz-server-side-encryption": "AES256"}
    assert twin.signed("GET", "/enc-read/missing", headers=sse).status_code == 404
