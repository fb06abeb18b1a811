"""Real boto3 against the RGW gateway: bucket lifecycle configuration (?lifecycle) and the passes
that apply it — expiration by prefix, tags and size, noncurrent versions, lone delete markers and
incomplete multipart uploads. A pass is run with a lifecycle day of 60 s (RGW's
rgw_lc_debug_interval), at a chosen time, so the test needs no waiting."""

from __future__ import annotations

import time
from typing import Any

import pytest
from botocore.client import BaseClient
from botocore.exceptions import ClientError

from services.ceph.rgw import lifecycle
from services.ceph.rgw.gateway import Gateway
from services.ceph.rgw.http import RunningServer
from tests.integration import test_ceph_rgw_s3 as base
from tests.integration.test_ceph_rgw_s3 import code, s3_error

gateway = base.gateway  # the shared fixtures: one gateway and client per test module
s3 = base.s3
DAY = 60.0


def rule(rid: str, flt: dict[str, Any], **actions: Any) -> dict[str, Any]:
    return {"ID": rid, "Filter": flt, "Status": "Enabled", **actions}


def keys(s3: BaseClient, bucket: str) -> list[str]:
    return [o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])]


def test_configuration_round_trip_and_refusals(s3: BaseClient) -> None:
    s3.create_bucket(Bucket="lc-conf")
    with pytest.raises(ClientError) as e:
        s3.get_bucket_lifecycle_configuration(Bucket="lc-conf")
    assert code(e) == "NoSuchLifecycleConfiguration" and e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404
    rules = [rule("raw", {"Prefix": "raw/"}, Expiration={"Days": 30}),
             rule("tmp", {"And": {"Prefix": "tmp/", "Tags": [{"Key": "kind", "Value": "scratch"}],
                                  "ObjectSizeGreaterThan": 1024}}, Expiration={"Days": 1}),
             rule("old", {"Prefix": ""}, NoncurrentVersionExpiration={"NoncurrentDays": 7},
                  AbortIncompleteMultipartUpload={"DaysAfterInitiation": 2}),
             rule("nonempty", {"ObjectSizeGreaterThan": 0}, Expiration={"Days": 9})]  # a size of 0 is a filter
    s3.put_bucket_lifecycle_configuration(Bucket="lc-conf", LifecycleConfiguration={"Rules": rules})
    got = s3.get_bucket_lifecycle_configuration(Bucket="lc-conf")["Rules"]
    assert got == rules

    refused = [([rule("z", {"Prefix": ""}, Expiration={"Days": 0})], "InvalidArgument"),
               ([rule("t", {"Prefix": ""}, Transitions=[{"Days": 30, "StorageClass": "GLACIER"}])],
                "InvalidStorageClass"),
               ([rule("d", {"Prefix": "a"}, Expiration={"Days": 1}), rule("d", {"Prefix": "b"},
                                                                          Expiration={"Days": 1})], "InvalidArgument"),
               ([rule("n", {"Prefix": ""})], "MalformedXML"),
               ([rule("a", {"Tag": {"Key": "k", "Value": "v"}}, AbortIncompleteMultipartUpload={
                   "DaysAfterInitiation": 1})], "InvalidArgument"),
               ([{**rule("s", {"Prefix": ""}, Expiration={"Days": 1}), "Status": "Maybe"}], "MalformedXML")]
    for bad, err in refused:
        assert s3_error(s3.put_bucket_lifecycle_configuration, Bucket="lc-conf",
                        LifecycleConfiguration={"Rules": bad}) == err, bad
    assert s3.get_bucket_lifecycle_configuration(Bucket="lc-conf")["Rules"] == rules  # unchanged
    s3.delete_bucket_lifecycle(Bucket="lc-conf")
    assert s3_error(s3.get_bucket_lifecycle_configuration, Bucket="lc-conf") == "NoSuchLifecycleConfiguration"


def test_expiration_by_prefix_tags_and_size(gateway: tuple[Gateway, RunningServer], s3: BaseClient) -> None:
    gw, _ = gateway
    s3.create_bucket(Bucket="lc-exp")
    s3.put_object(Bucket="lc-exp", Key="raw/a", Body=b"a")
    s3.put_object(Bucket="lc-exp", Key="curated/b", Body=b"b")
    s3.put_object(Bucket="lc-exp", Key="tmp/big", Body=b"x" * 2000, Tagging="kind=scratch")
    s3.put_object(Bucket="lc-exp", Key="tmp/small", Body=b"x", Tagging="kind=scratch")
    s3.put_object(Bucket="lc-exp", Key="tmp/kept", Body=b"x" * 2000)
    s3.put_bucket_lifecycle_configuration(Bucket="lc-exp", LifecycleConfiguration={"Rules": [
        rule("raw", {"Prefix": "raw/"}, Expiration={"Days": 3}),
        rule("tmp", {"And": {"Prefix": "tmp/", "Tags": [{"Key": "kind", "Value": "scratch"}],
                             "ObjectSizeGreaterThan": 1024}}, Expiration={"Days": 1}),
        {**rule("off", {"Prefix": "curated/"}, Expiration={"Days": 1}), "Status": "Disabled"}]})
    everything = ["curated/b", "raw/a", "tmp/big", "tmp/kept", "tmp/small"]
    assert lifecycle.run(gw.store, time.time() + 0.5 * DAY, DAY)["lc-exp"].expired == []  # not yet a day old
    assert keys(s3, "lc-exp") == everything
    assert lifecycle.run(gw.store, time.time() + 1.5 * DAY, DAY)["lc-exp"].expired == ["tmp/big"]
    assert lifecycle.run(gw.store, time.time() + 3.5 * DAY, DAY)["lc-exp"].expired == ["raw/a"]
    assert keys(s3, "lc-exp") == ["curated/b", "tmp/kept", "tmp/small"]  # the disabled rule did nothing


def test_versions_markers_and_uploads(gateway: tuple[Gateway, RunningServer], s3: BaseClient) -> None:
    gw, _ = gateway
    s3.create_bucket(Bucket="lc-ver")
    s3.put_bucket_versioning(Bucket="lc-ver", VersioningConfiguration={"Status": "Enabled"})
    old = s3.put_object(Bucket="lc-ver", Key="ckpt", Body=b"v1")["VersionId"]
    new = s3.put_object(Bucket="lc-ver", Key="ckpt", Body=b"v2")["VersionId"]
    up = s3.create_multipart_upload(Bucket="lc-ver", Key="stuck")["UploadId"]
    s3.put_bucket_lifecycle_configuration(Bucket="lc-ver", LifecycleConfiguration={"Rules": [
        rule("cur", {"Prefix": ""}, Expiration={"Days": 5}),
        rule("nc", {"Prefix": ""}, NoncurrentVersionExpiration={"NoncurrentDays": 2},
             AbortIncompleteMultipartUpload={"DaysAfterInitiation": 1}),
        rule("dm", {"Prefix": ""}, Expiration={"ExpiredObjectDeleteMarker": True})]})

    done = lifecycle.run(gw.store, time.time() + 2.5 * DAY, DAY)["lc-ver"]
    assert done.noncurrent == [("ckpt", old)] and done.aborted == [up] and done.expired == []
    versions = s3.list_object_versions(Bucket="lc-ver")
    assert [v["VersionId"] for v in versions["Versions"]] == [new]
    assert "Uploads" not in s3.list_multipart_uploads(Bucket="lc-ver")

    done = lifecycle.run(gw.store, time.time() + 5.5 * DAY, DAY)["lc-ver"]  # versioned: expiry is a delete marker
    assert done.expired == ["ckpt"]
    versions = s3.list_object_versions(Bucket="lc-ver")
    assert [v["VersionId"] for v in versions["Versions"]] == [new] and len(versions["DeleteMarkers"]) == 1
    assert s3_error(s3.get_object, Bucket="lc-ver", Key="ckpt") == "NoSuchKey"

    done = lifecycle.run(gw.store, time.time() + 8 * DAY, DAY)["lc-ver"]  # the version, then the lone marker
    assert done.noncurrent == [("ckpt", new)] and done.markers == ["ckpt"]
    assert "Versions" not in s3.list_object_versions(Bucket="lc-ver")
    assert "DeleteMarkers" not in s3.list_object_versions(Bucket="lc-ver")


def test_noncurrent_rules_keep_to_their_prefix(gateway: tuple[Gateway, RunningServer], s3: BaseClient) -> None:
    gw, _ = gateway
    s3.create_bucket(Bucket="lc-scope")
    s3.put_bucket_versioning(Bucket="lc-scope", VersioningConfiguration={"Status": "Enabled"})
    for key in ("tmp/y", "keep/x"):  # each: a version, a delete marker over it, a newer version
        s3.put_object(Bucket="lc-scope", Key=key, Body=b"1")
        s3.delete_object(Bucket="lc-scope", Key=key)
        s3.put_object(Bucket="lc-scope", Key=key, Body=b"2")
    s3.put_bucket_lifecycle_configuration(Bucket="lc-scope", LifecycleConfiguration={"Rules": [
        rule("nc", {"Prefix": "tmp/"}, NoncurrentVersionExpiration={"NoncurrentDays": 1})]})
    done = lifecycle.run(gw.store, time.time() + 3 * DAY, DAY)["lc-scope"]
    assert {k for k, _ in done.noncurrent} == {"tmp/y"} and len(done.noncurrent) == 2  # the marker and v1
    listed = s3.list_object_versions(Bucket="lc-scope")
    assert sorted(v["Key"] for v in listed["Versions"]) == ["keep/x", "keep/x", "tmp/y"]
    assert [m["Key"] for m in listed["DeleteMarkers"]] == ["keep/x"]
