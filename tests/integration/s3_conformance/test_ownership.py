"""Bucket ownership controls as Tentacle's RGW answers them (ceph PR #64152; s3-tests PR #660:
test_create_bucket_no_ownership_controls, test_create_bucket_bucket_owner_enforced/_preferred,
test_create_bucket_object_writer, test_put_bucket_ownership_*), and x-amz-expected-bucket-owner as Squid
answers it (ceph PR #61215; s3-tests test_expected_bucket_owner), against the deployed twin. Alice owns
the buckets, Bob writes into them."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
import requests
from botocore.client import BaseClient
from botocore.exceptions import ClientError

from tests.integration.s3_conformance.s3_twin import BOB, S3Twin, error


@pytest.fixture(scope="module")
def bob(twin: S3Twin) -> BaseClient:
    return twin.client(BOB)


def refused(fn, **kw: object) -> tuple[int, str]:  # type: ignore[no-untyped-def]
    with pytest.raises(ClientError) as e:
        fn(**kw)
    return error(e)


def controls(s3: BaseClient, bucket: str) -> str:
    rules = s3.get_bucket_ownership_controls(Bucket=bucket)["OwnershipControls"]["Rules"]
    assert len(rules) == 1
    return str(rules[0]["ObjectOwnership"])


def owner_of(client: BaseClient, bucket: str, key: str) -> str:
    return str(client.get_object_acl(Bucket=bucket, Key=key)["Owner"]["ID"])


def let_bob(s3: BaseClient, bucket: str, *actions: str) -> None:
    """A bucket policy giving Bob `actions` on the bucket's objects (ACLs may be disabled)."""
    s3.put_bucket_policy(Bucket=bucket, Policy=json.dumps({"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"AWS": ["arn:aws:iam:::user/bob"]}, "Action": list(actions),
        "Resource": f"arn:aws:s3:::{bucket}/*"}]}))


def test_a_new_bucket_has_no_ownership_controls_and_writers_own_their_objects(s3: BaseClient,
                                                                              bob: BaseClient) -> None:
    s3.create_bucket(Bucket="own-none")
    assert refused(s3.get_bucket_ownership_controls, Bucket="own-none") == (404, "OwnershipControlsNotFoundError")
    s3.put_bucket_acl(Bucket="own-none", GrantWrite="id=bob", GrantFullControl="id=alice")
    bob.put_object(Bucket="own-none", Key="bobs", Body=b"b", ACL="bucket-owner-full-control")
    assert owner_of(bob, "own-none", "bobs") == "bob"  # as ObjectWriter: the canned ACL only grants
    assert s3.get_object(Bucket="own-none", Key="bobs")["Body"].read() == b"b"  # ... alice full control


def test_put_get_delete_ownership_controls(s3: BaseClient) -> None:
    s3.create_bucket(Bucket="own-crud", ObjectOwnership="BucketOwnerPreferred")
    assert controls(s3, "own-crud") == "BucketOwnerPreferred"
    for mode in ("ObjectWriter", "BucketOwnerEnforced", "BucketOwnerPreferred"):
        s3.put_bucket_ownership_controls(Bucket="own-crud", OwnershipControls={"Rules": [{"ObjectOwnership": mode}]})
        assert controls(s3, "own-crud") == mode
    assert refused(s3.put_bucket_ownership_controls, Bucket="own-crud",
                   OwnershipControls={"Rules": [{"ObjectOwnership": "Nobody"}]}) == (400, "MalformedXML")
    assert controls(s3, "own-crud") == "BucketOwnerPreferred"  # a refused PUT changes nothing
    assert s3.delete_bucket_ownership_controls(Bucket="own-crud")["ResponseMetadata"]["HTTPStatusCode"] == 204
    assert refused(s3.get_bucket_ownership_controls, Bucket="own-crud") == (404, "OwnershipControlsNotFoundError")
    assert s3.delete_bucket_ownership_controls(Bucket="own-crud")["ResponseMetadata"]["HTTPStatusCode"] == 204
    for mode in ("ObjectWriter", "BucketOwnerEnforced"):
        s3.create_bucket(Bucket=f"own-crud-{mode.lower()}", ObjectOwnership=mode)
        assert controls(s3, f"own-crud-{mode.lower()}") == mode


def test_create_bucket_with_a_bad_ownership_header_is_refused(twin: S3Twin, s3: BaseClient) -> None:
    r = twin.signed("PUT", "/own-bad", headers={"x-amz-object-ownership": "Everyone"})
    assert r.status_code == 400 and ET.fromstring(r.content).findtext("Code") == "InvalidArgument", r.content
    assert refused(s3.head_bucket, Bucket="own-bad")[0] == 404  # not created
    # ACLs are what BucketOwnerEnforced disables: a public one with it is refused, nothing created
    assert refused(s3.create_bucket, Bucket="own-bad", ACL="public-read", ObjectOwnership="BucketOwnerEnforced") \
        == (400, "InvalidBucketAclWithObjectOwnership")
    assert refused(s3.head_bucket, Bucket="own-bad")[0] == 404
    s3.create_bucket(Bucket="own-bad", ACL="private", ObjectOwnership="BucketOwnerEnforced")


def test_bucket_owner_preferred(s3: BaseClient, bob: BaseClient) -> None:
    s3.create_bucket(Bucket="own-preferred", ObjectOwnership="BucketOwnerPreferred")
    s3.put_bucket_acl(Bucket="own-preferred", GrantWrite="id=bob", GrantFullControl="id=alice")
    bob.put_object(Bucket="own-preferred", Key="given", Body=b"g", ACL="bucket-owner-full-control")
    assert owner_of(s3, "own-preferred", "given") == "alice"  # the bucket owner takes it
    bob.put_object(Bucket="own-preferred", Key="kept", Body=b"k")
    assert owner_of(bob, "own-preferred", "kept") == "bob"  # without that ACL the writer keeps it
    assert refused(s3.get_object, Bucket="own-preferred", Key="kept") == (403, "AccessDenied")
    up = bob.create_multipart_upload(Bucket="own-preferred", Key="mp", ACL="bucket-owner-full-control")["UploadId"]
    etag = bob.upload_part(Bucket="own-preferred", Key="mp", UploadId=up, PartNumber=1, Body=b"part")["ETag"]
    bob.complete_multipart_upload(Bucket="own-preferred", Key="mp", UploadId=up,
                                  MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etag}]})
    assert owner_of(s3, "own-preferred", "mp") == "alice"


def test_bucket_owner_enforced_disables_acls(s3: BaseClient, bob: BaseClient) -> None:
    b = "own-enforced"
    s3.create_bucket(Bucket=b, ObjectOwnership="BucketOwnerEnforced")
    let_bob(s3, b, "s3:PutObject")
    bob.put_object(Bucket=b, Key="bobs", Body=b"x")
    assert owner_of(s3, b, "bobs") == "alice"  # the bucket owner owns every object
    assert refused(bob.get_object, Bucket=b, Key="bobs") == (403, "AccessDenied")  # the writer has no grant
    bob.put_object(Bucket=b, Key="full", Body=b"f", ACL="bucket-owner-full-control")  # the one ACL allowed
    assert owner_of(s3, b, "full") == "alice"
    for acl in ("public-read", "bucket-owner-read"):
        assert refused(bob.put_object, Bucket=b, Key="public", Body=b"p", ACL=acl) \
            == (400, "AccessControlListNotSupported")
    assert refused(bob.put_object, Bucket=b, Key="public", Body=b"p", GrantRead="id=bob") \
        == (400, "AccessControlListNotSupported")
    assert refused(s3.head_object, Bucket=b, Key="public")[0] == 404  # nothing written
    assert refused(bob.create_multipart_upload, Bucket=b, Key="mp", ACL="public-read") \
        == (400, "AccessControlListNotSupported")
    up = bob.create_multipart_upload(Bucket=b, Key="mp")["UploadId"]
    etag = bob.upload_part(Bucket=b, Key="mp", UploadId=up, PartNumber=1, Body=b"part")["ETag"]
    bob.complete_multipart_upload(Bucket=b, Key="mp", UploadId=up,
                                  MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etag}]})
    assert owner_of(s3, b, "mp") == "alice"
    assert refused(s3.put_bucket_acl, Bucket=b, ACL="public-read") == (400, "AccessControlListNotSupported")
    assert refused(s3.put_object_acl, Bucket=b, Key="bobs", ACL="public-read") == (400, "AccessControlListNotSupported")
    grants = s3.get_bucket_acl(Bucket=b)["Grants"]  # reading ACLs still works
    assert [(g["Grantee"]["ID"], g["Permission"]) for g in grants] == [("alice", "FULL_CONTROL")]


def test_enforced_ignores_the_acls_objects_already_have(twin: S3Twin, s3: BaseClient, bob: BaseClient) -> None:
    b = "own-switch"
    s3.create_bucket(Bucket=b, ObjectOwnership="ObjectWriter")
    s3.put_object(Bucket=b, Key="shared", Body=b"s", ACL="public-read")
    assert bob.get_object(Bucket=b, Key="shared")["Body"].read() == b"s"
    assert requests.get(f"{twin.endpoint}/{b}/shared", timeout=30).status_code == 200
    s3.put_bucket_ownership_controls(Bucket=b, OwnershipControls={"Rules": [{"ObjectOwnership":
                                                                             "BucketOwnerEnforced"}]})
    assert refused(bob.get_object, Bucket=b, Key="shared") == (403, "AccessDenied")
    assert requests.get(f"{twin.endpoint}/{b}/shared", timeout=30).status_code == 403
    assert s3.get_object(Bucket=b, Key="shared")["Body"].read() == b"s"  # the owner still reads it
    s3.delete_bucket_ownership_controls(Bucket=b)  # ACLs count again
    assert bob.get_object(Bucket=b, Key="shared")["Body"].read() == b"s"


def test_copy_into_an_enforced_bucket_is_the_bucket_owners(s3: BaseClient, bob: BaseClient) -> None:
    s3.create_bucket(Bucket="own-copy-src")
    s3.put_object(Bucket="own-copy-src", Key="src", Body=b"copied", ACL="public-read")
    s3.create_bucket(Bucket="own-copy-dst", ObjectOwnership="BucketOwnerEnforced")
    let_bob(s3, "own-copy-dst", "s3:PutObject")
    bob.copy_object(Bucket="own-copy-dst", Key="dst", CopySource="own-copy-src/src")
    assert owner_of(s3, "own-copy-dst", "dst") == "alice"
    assert refused(bob.copy_object, Bucket="own-copy-dst", Key="dst2", CopySource="own-copy-src/src",
                   ACL="public-read") == (400, "AccessControlListNotSupported")
    assert refused(s3.head_object, Bucket="own-copy-dst", Key="dst2")[0] == 404


def test_expected_bucket_owner(s3: BaseClient, bob: BaseClient) -> None:
    b = "own-expected"
    s3.create_bucket(Bucket=b)
    s3.put_object(Bucket=b, Key="k", Body=b"k")
    assert [o["Key"] for o in s3.list_objects_v2(Bucket=b, ExpectedBucketOwner="alice")["Contents"]] == ["k"]
    assert refused(s3.list_objects_v2, Bucket=b, ExpectedBucketOwner="alicefoo") == (403, "AccessDenied")
    assert refused(s3.head_bucket, Bucket=b, ExpectedBucketOwner="bob")[0] == 403
    assert refused(s3.put_object, Bucket=b, Key="new", Body=b"n", ExpectedBucketOwner="bob") == (403, "AccessDenied")
    assert refused(s3.head_object, Bucket=b, Key="new")[0] == 404  # nothing written
    assert refused(s3.delete_object, Bucket=b, Key="k", ExpectedBucketOwner="bob") == (403, "AccessDenied")
    assert refused(s3.put_bucket_tagging, Bucket=b, ExpectedBucketOwner="bob",
                   Tagging={"TagSet": [{"Key": "a", "Value": "b"}]}) == (403, "AccessDenied")
    assert refused(s3.get_bucket_tagging, Bucket=b)[1] == "NoSuchTagSet"
    s3.put_object(Bucket=b, Key="new", Body=b"n", ExpectedBucketOwner="alice")
    assert s3.get_object(Bucket=b, Key="k", ExpectedBucketOwner="alice")["Body"].read() == b"k"
    # Bob may read alice's public object, and asking that alice owns the bucket is the right guess
    s3.put_object_acl(Bucket=b, Key="k", ACL="public-read")
    assert bob.get_object(Bucket=b, Key="k", ExpectedBucketOwner="alice")["Body"].read() == b"k"
    assert refused(bob.get_object, Bucket=b, Key="k", ExpectedBucketOwner="bob") == (403, "AccessDenied")


def test_source_expected_bucket_owner(s3: BaseClient) -> None:
    s3.create_bucket(Bucket="own-src-expected")
    s3.put_object(Bucket="own-src-expected", Key="src", Body=b"s" * 10)
    assert refused(s3.copy_object, Bucket="own-src-expected", Key="dst", CopySource="own-src-expected/src",
                   ExpectedSourceBucketOwner="bob") == (403, "AccessDenied")
    assert refused(s3.head_object, Bucket="own-src-expected", Key="dst")[0] == 404
    s3.copy_object(Bucket="own-src-expected", Key="dst", CopySource="own-src-expected/src",
                   ExpectedSourceBucketOwner="alice", ExpectedBucketOwner="alice")
    up = s3.create_multipart_upload(Bucket="own-src-expected", Key="mp")["UploadId"]
    assert refused(s3.upload_part_copy, Bucket="own-src-expected", Key="mp", UploadId=up, PartNumber=1,
                   CopySource="own-src-expected/src", ExpectedSourceBucketOwner="bob") == (403, "AccessDenied")
    assert s3.list_parts(Bucket="own-src-expected", Key="mp", UploadId=up).get("Parts", []) == []
    s3.upload_part_copy(Bucket="own-src-expected", Key="mp", UploadId=up, PartNumber=1,
                        CopySource="own-src-expected/src", ExpectedSourceBucketOwner="alice")
    assert [p["Size"] for p in s3.list_parts(Bucket="own-src-expected", Key="mp", UploadId=up)["Parts"]] == [10]
