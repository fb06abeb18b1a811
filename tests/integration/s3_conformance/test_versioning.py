"""Versioning headers and per-version ACLs as RGW (Squid) answers them, against the deployed twin:
no x-amz-version-id from a bucket that was never versioned, x-amz-delete-marker on the deletes that
make or remove a delete marker (and on a GET that finds one), and ACLs of one version
(ceph/s3-tests test_versioned_object_acl, test_versioned_object_acl_no_version_specified,
test_versioning_obj_create_read_remove_head)."""

from __future__ import annotations

import pytest
import requests
from botocore.client import BaseClient
from botocore.exceptions import ClientError

from tests.integration.s3_conformance.s3_twin import S3Twin, error

ALL_USERS = "http://acs.amazonaws.com/groups/global/AllUsers"




def headers(r: dict) -> dict[str, str]:  # type: ignore[type-arg]
    return dict(r["ResponseMetadata"]["HTTPHeaders"])


def grants(r: dict) -> list[tuple[str, str]]:  # type: ignore[type-arg]
    return sorted((g["Grantee"].get("ID") or g["Grantee"]["URI"], g["Permission"]) for g in r["Grants"])


def test_an_unversioned_bucket_names_no_version(twin: S3Twin, s3: BaseClient) -> None:
    s3.create_bucket(Bucket="unversioned")
    answers = [s3.put_object(Bucket="unversioned", Key="k", Body=b"1"),
               s3.copy_object(Bucket="unversioned", Key="c", CopySource={"Bucket": "unversioned", "Key": "k"}),
               s3.get_object(Bucket="unversioned", Key="k"), s3.head_object(Bucket="unversioned", Key="k"),
               s3.get_object_acl(Bucket="unversioned", Key="k"),
               s3.put_object_tagging(Bucket="unversioned", Key="k", Tagging={"TagSet": [{"Key": "a", "Value": "b"}]})]
    up = s3.create_multipart_upload(Bucket="unversioned", Key="m")["UploadId"]
    e = s3.upload_part(Bucket="unversioned", Key="m", UploadId=up, PartNumber=1, Body=b"x")["ETag"]
    answers.append(s3.complete_multipart_upload(Bucket="unversioned", Key="m", UploadId=up,
                                                MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e}]}))
    answers.append(s3.delete_object(Bucket="unversioned", Key="c"))
    for r in answers:
        assert "x-amz-version-id" not in headers(r), r
        assert "VersionId" not in r, r
    assert "x-amz-delete-marker" not in headers(answers[-1])
    deleted = s3.delete_objects(Bucket="unversioned", Delete={"Objects": [{"Key": "m"}]})["Deleted"]
    assert "DeleteMarker" not in deleted[0]


def test_deletes_in_a_versioned_bucket_say_delete_marker(s3: BaseClient) -> None:
    s3.create_bucket(Bucket="ver")
    s3.put_bucket_versioning(Bucket="ver", VersioningConfiguration={"Status": "Enabled"})
    v1 = s3.put_object(Bucket="ver", Key="k", Body=b"1")["VersionId"]
    r = s3.delete_object(Bucket="ver", Key="k")
    h = headers(r)
    assert (h["x-amz-delete-marker"], r["DeleteMarker"]) == ("true", True)
    marker = h["x-amz-version-id"]
    assert marker not in ("", "null", v1)
    with pytest.raises(ClientError) as err:
        s3.get_object(Bucket="ver", Key="k")
    assert error(err) == (404, "NoSuchKey")
    assert err.value.response["ResponseMetadata"]["HTTPHeaders"]["x-amz-delete-marker"] == "true"
    r = s3.delete_object(Bucket="ver", Key="k", VersionId=marker)  # removing the marker says so too
    assert (headers(r)["x-amz-delete-marker"], headers(r)["x-amz-version-id"]) == ("true", marker)
    r = s3.delete_object(Bucket="ver", Key="k", VersionId=v1)  # removing a version is no marker
    assert "x-amz-delete-marker" not in headers(r) and headers(r)["x-amz-version-id"] == v1
    d = s3.delete_objects(Bucket="ver", Delete={"Objects": [{"Key": "gone"}]})["Deleted"][0]
    assert d["DeleteMarker"] is True and d["DeleteMarkerVersionId"]


def test_acls_of_one_version(twin: S3Twin, s3: BaseClient) -> None:
    s3.create_bucket(Bucket="ver-acl")
    s3.put_bucket_versioning(Bucket="ver-acl", VersioningConfiguration={"Status": "Enabled"})
    v1 = s3.put_object(Bucket="ver-acl", Key="foo", Body=b"one")["VersionId"]
    r = s3.get_object_acl(Bucket="ver-acl", Key="foo", VersionId=v1)
    assert (r["Owner"]["ID"], r["Owner"]["DisplayName"]) == ("alice", "Alice")
    assert headers(r)["x-amz-version-id"] == v1
    assert grants(r) == [("alice", "FULL_CONTROL")]
    r = s3.put_object_acl(Bucket="ver-acl", Key="foo", VersionId=v1, ACL="public-read")
    assert headers(r)["x-amz-version-id"] == v1
    assert grants(s3.get_object_acl(Bucket="ver-acl", Key="foo", VersionId=v1)) == [
        ("alice", "FULL_CONTROL"), (ALL_USERS, "READ")]
    v2 = s3.put_object(Bucket="ver-acl", Key="foo", Body=b"two")["VersionId"]
    assert grants(s3.get_object_acl(Bucket="ver-acl", Key="foo")) == [("alice", "FULL_CONTROL")]  # the new one
    assert grants(s3.get_object_acl(Bucket="ver-acl", Key="foo", VersionId=v1))[1] == (ALL_USERS, "READ")
    # anonymous: v1 is public, the current version is not
    assert requests.get(f"{twin.endpoint}/ver-acl/foo?versionId={v1}", timeout=30).content == b"one"
    assert requests.get(f"{twin.endpoint}/ver-acl/foo", timeout=30).status_code == 403
    s3.put_object_acl(Bucket="ver-acl", Key="foo", ACL="public-read")  # no version: the current one, v2
    assert grants(s3.get_object_acl(Bucket="ver-acl", Key="foo", VersionId=v2))[1] == (ALL_USERS, "READ")
    assert requests.get(f"{twin.endpoint}/ver-acl/foo", timeout=30).content == b"two"
    with pytest.raises(ClientError) as err:
        s3.get_object_acl(Bucket="ver-acl", Key="foo", VersionId="nosuchversion0000000000000000000")
    assert error(err) == (404, "NoSuchVersion")
