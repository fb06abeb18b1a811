"""Real boto3 against the RGW gateway: bucket versioning (Enabled, Suspended), versioned GET/HEAD/DELETE,
delete markers, ListObjectVersions."""

from __future__ import annotations

import pytest
from botocore.client import BaseClient
from botocore.exceptions import ClientError

from services.ceph.rgw import bucket_index
from services.ceph.rgw.cluster_setup import DATA_POOL
from services.ceph.rgw.gateway import Gateway
from services.ceph.rgw.http import RunningServer
from tests.integration import test_ceph_rgw_s3 as base
from tests.integration.test_ceph_rgw_s3 import code

gateway = base.gateway  # the shared fixtures: one gateway and client per test module
s3 = base.s3


def test_versioning_enabled_suspended(gateway: tuple[Gateway, RunningServer], s3: BaseClient) -> None:
    gw, _ = gateway
    s3.create_bucket(Bucket="ver")
    assert "Status" not in s3.get_bucket_versioning(Bucket="ver")
    s3.put_object(Bucket="ver", Key="k", Body=b"pre")  # the "null" version, from before versioning
    s3.put_bucket_versioning(Bucket="ver", VersioningConfiguration={"Status": "Enabled"})
    assert s3.get_bucket_versioning(Bucket="ver")["Status"] == "Enabled"
    v1 = s3.put_object(Bucket="ver", Key="k", Body=b"one")["VersionId"]
    v2 = s3.put_object(Bucket="ver", Key="k", Body=b"two")["VersionId"]
    assert v1 != v2 and len(v1) == 32
    # RGW's instance-id table: letters, digits, "-" and "." (never "_"); an id may start with "-".
    ids = "".join(bucket_index.new_version_id() for _ in range(200))
    assert set(ids) == set(bucket_index.ID_CHARS) and "_" not in ids + v1 + v2
    assert s3.get_object(Bucket="ver", Key="k")["Body"].read() == b"two"
    assert s3.get_object(Bucket="ver", Key="k", VersionId=v1)["Body"].read() == b"one"
    assert s3.get_object(Bucket="ver", Key="k", VersionId="null")["Body"].read() == b"pre"
    assert s3.head_object(Bucket="ver", Key="k", VersionId=v1)["VersionId"] == v1
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket="ver", Key="k", VersionId="x" * 32)
    assert code(e) == "NoSuchVersion"

    dm = s3.delete_object(Bucket="ver", Key="k")
    assert dm["DeleteMarker"] and dm["VersionId"]
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket="ver", Key="k")
    assert code(e) == "NoSuchKey"
    assert e.value.response["ResponseMetadata"]["HTTPHeaders"]["x-amz-delete-marker"] == "true"
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket="ver", Key="k", VersionId=dm["VersionId"])
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 405
    assert "Contents" not in s3.list_objects_v2(Bucket="ver")
    lv = s3.list_object_versions(Bucket="ver")
    assert [(v["VersionId"], v["IsLatest"]) for v in lv["Versions"]] == [(v2, False), (v1, False), ("null", False)]
    assert [(d["VersionId"], d["IsLatest"]) for d in lv["DeleteMarkers"]] == [(dm["VersionId"], True)]
    page = s3.list_object_versions(Bucket="ver", MaxKeys=2)
    assert page["IsTruncated"] and page["NextKeyMarker"] == "k"
    rest = s3.list_object_versions(Bucket="ver", KeyMarker=page["NextKeyMarker"],
                                   VersionIdMarker=page["NextVersionIdMarker"])
    assert [v["VersionId"] for v in rest["Versions"]] == [v1, "null"]

    r = s3.delete_object(Bucket="ver", Key="k", VersionId=dm["VersionId"])  # removing the marker undeletes
    assert r["DeleteMarker"] and r["VersionId"] == dm["VersionId"]
    assert s3.get_object(Bucket="ver", Key="k")["Body"].read() == b"two"
    s3.delete_object(Bucket="ver", Key="k", VersionId=v2)  # removing a version for good
    assert s3.get_object(Bucket="ver", Key="k")["Body"].read() == b"one"

    s3.put_bucket_versioning(Bucket="ver", VersioningConfiguration={"Status": "Suspended"})
    s3.put_object(Bucket="ver", Key="k", Body=b"suspended")  # replaces the old null version
    vs = s3.list_object_versions(Bucket="ver")["Versions"]
    assert [(v["VersionId"], v["Size"]) for v in vs] == [("null", 9), (v1, 3)]
    assert s3.get_object(Bucket="ver", Key="k")["VersionId"] == "null"
    assert s3.delete_object(Bucket="ver", Key="k")["DeleteMarker"]  # a null delete marker replaces it
    lv = s3.list_object_versions(Bucket="ver")
    assert [v["VersionId"] for v in lv["Versions"]] == [v1]
    assert [d["VersionId"] for d in lv["DeleteMarkers"]] == ["null"]
    with pytest.raises(ClientError) as e:
        s3.put_bucket_versioning(Bucket="ver", VersioningConfiguration={"Status": "Off"})  # type: ignore[typeddict-item]
    assert code(e) == "IllegalVersioningConfigurationException"
    with pytest.raises(ClientError) as e:
        s3.delete_bucket(Bucket="ver")
    assert code(e) == "BucketNotEmpty"
    s3.delete_objects(Bucket="ver", Delete={"Objects": [{"Key": "k", "VersionId": v1},
                                                        {"Key": "k", "VersionId": "null"}]})
    assert "Versions" not in s3.list_object_versions(Bucket="ver")
    s3.delete_bucket(Bucket="ver")
    assert DATA_POOL in gw.cluster.pools
