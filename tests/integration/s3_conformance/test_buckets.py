"""CreateBucket on a bucket that exists, as RGW (Squid) answers it, against the deployed twin: its owner
re-creating it succeeds and changes nothing (RGW's default zonegroup answers as AWS's us-east-1, not
BucketAlreadyOwnedByYou; ceph/s3-tests test_bucket_create_exists accepts either), another user gets
409 BucketAlreadyExists (test_bucket_create_exists_nonowner)."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError

from tests.integration.s3_conformance.s3_twin import BOB, S3Twin, error


def test_owner_recreating_a_bucket_succeeds_and_changes_nothing(twin: S3Twin) -> None:
    s3 = twin.client()
    s3.create_bucket(Bucket="again")
    s3.put_object(Bucket="again", Key="kept", Body=b"data")
    s3.put_bucket_versioning(Bucket="again", VersioningConfiguration={"Status": "Enabled"})
    r = s3.create_bucket(Bucket="again")
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert [o["Key"] for o in s3.list_objects_v2(Bucket="again")["Contents"]] == ["kept"]
    assert s3.get_bucket_versioning(Bucket="again")["Status"] == "Enabled"
    assert [b["Name"] for b in s3.list_buckets()["Buckets"]].count("again") == 1


def test_another_owner_gets_bucket_already_exists(twin: S3Twin) -> None:
    twin.client().create_bucket(Bucket="taken")
    with pytest.raises(ClientError) as e:
        twin.client(BOB).create_bucket(Bucket="taken")
    assert error(e) == (409, "BucketAlreadyExists")
    assert "taken" not in [b["Name"] for b in twin.client(BOB).list_buckets()["Buckets"]]
