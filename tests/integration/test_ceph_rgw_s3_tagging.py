"""Real boto3 against the RGW gateway: object and bucket tagging (x-amz-tagging at upload, copy and
multipart initiation; ?tagging PUT/GET/DELETE; x-amz-tagging-count), S3's limits, and policies on
the tagging actions."""

from __future__ import annotations

import json
import os

import pytest
from botocore.client import BaseClient
from botocore.exceptions import ClientError

from tests.integration import test_ceph_rgw_s3 as base
from tests.integration.test_ceph_rgw_s3 import code

gateway = base.gateway  # the shared fixtures: one gateway and client per test module
s3 = base.s3


def tags(s3: BaseClient, bucket: str, key: str, **kw: str) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in s3.get_object_tagging(Bucket=bucket, Key=key, **kw)["TagSet"]}


def tag_set(d: dict[str, str]) -> dict[str, list[dict[str, str]]]:
    return {"TagSet": [{"Key": k, "Value": v} for k, v in d.items()]}


def test_object_tags_at_upload_and_after(s3: BaseClient) -> None:
    s3.create_bucket(Bucket="tags")
    s3.put_object(Bucket="tags", Key="k", Body=b"x", Tagging="project=av&stage=raw%20data")
    assert tags(s3, "tags", "k") == {"project": "av", "stage": "raw data"}
    assert s3.get_object(Bucket="tags", Key="k")["TagCount"] == 2
    assert s3.head_object(Bucket="tags", Key="k")["ResponseMetadata"]["HTTPHeaders"]["x-amz-tagging-count"] == "2"

    s3.put_object_tagging(Bucket="tags", Key="k", Tagging=tag_set({"stage": "curated"}))  # replaces the set
    assert tags(s3, "tags", "k") == {"stage": "curated"}
    bad = [tag_set({f"k{i}": "v" for i in range(11)}),                 # 11 tags: S3 allows 10
           {"TagSet": [{"Key": "a", "Value": "1"}, {"Key": "a", "Value": "2"}]},
           tag_set({"aws:owner": "me"}), tag_set({"k" * 129: "v"}), tag_set({"k": "v" * 257})]
    for t in bad:
        with pytest.raises(ClientError) as e:
            s3.put_object_tagging(Bucket="tags", Key="k", Tagging=t)
        assert code(e) == "InvalidTag"
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket="tags", Key="refused", Body=b"x", Tagging="&".join(f"k{i}=v" for i in range(11)))
    assert code(e) == "InvalidTag"
    assert "Contents" not in s3.list_objects_v2(Bucket="tags", Prefix="refused")  # nothing stored
    assert tags(s3, "tags", "k") == {"stage": "curated"}  # unchanged by the refusals
    with pytest.raises(ClientError) as e:
        s3.get_object_tagging(Bucket="tags", Key="missing")
    assert code(e) == "NoSuchKey"

    s3.delete_object_tagging(Bucket="tags", Key="k")
    assert tags(s3, "tags", "k") == {}
    assert "TagCount" not in s3.get_object(Bucket="tags", Key="k")


def test_tags_follow_versions_copies_and_multipart(s3: BaseClient) -> None:
    s3.create_bucket(Bucket="tags-ver")
    s3.put_bucket_versioning(Bucket="tags-ver", VersioningConfiguration={"Status": "Enabled"})
    v1 = s3.put_object(Bucket="tags-ver", Key="k", Body=b"1", Tagging="v=1")["VersionId"]
    v2 = s3.put_object(Bucket="tags-ver", Key="k", Body=b"2", Tagging="v=2")["VersionId"]
    r = s3.put_object_tagging(Bucket="tags-ver", Key="k", VersionId=v1, Tagging=tag_set({"v": "one"}))
    assert r["VersionId"] == v1
    assert tags(s3, "tags-ver", "k", VersionId=v1) == {"v": "one"}
    assert tags(s3, "tags-ver", "k") == {"v": "2"}
    assert s3.get_object_tagging(Bucket="tags-ver", Key="k")["VersionId"] == v2

    s3.copy_object(Bucket="tags-ver", Key="copied", CopySource={"Bucket": "tags-ver", "Key": "k", "VersionId": v1})
    assert tags(s3, "tags-ver", "copied") == {"v": "one"}  # COPY, the default, keeps the source's tags
    s3.copy_object(Bucket="tags-ver", Key="retagged", CopySource={"Bucket": "tags-ver", "Key": "k"},
                   TaggingDirective="REPLACE", Tagging="fresh=yes")
    assert tags(s3, "tags-ver", "retagged") == {"fresh": "yes"}

    up = s3.create_multipart_upload(Bucket="tags-ver", Key="mp", Tagging="kind=checkpoint")["UploadId"]
    etag = s3.upload_part(Bucket="tags-ver", Key="mp", UploadId=up, PartNumber=1, Body=os.urandom(1000))["ETag"]
    s3.complete_multipart_upload(Bucket="tags-ver", Key="mp", UploadId=up,
                                 MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etag}]})
    assert tags(s3, "tags-ver", "mp") == {"kind": "checkpoint"}


def test_bucket_tags(s3: BaseClient) -> None:
    s3.create_bucket(Bucket="tags-bucket")
    with pytest.raises(ClientError) as e:
        s3.get_bucket_tagging(Bucket="tags-bucket")
    assert code(e) == "NoSuchTagSet" and e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404
    s3.put_bucket_tagging(Bucket="tags-bucket", Tagging=tag_set({"cost-center": "adas", "tier": "lake"}))
    got = s3.get_bucket_tagging(Bucket="tags-bucket")["TagSet"]
    assert {t["Key"]: t["Value"] for t in got} == {"cost-center": "adas", "tier": "lake"}
    with pytest.raises(ClientError) as e:
        s3.put_bucket_tagging(Bucket="tags-bucket", Tagging=tag_set({f"k{i}": "v" for i in range(51)}))
    assert code(e) == "InvalidTag"
    assert len(s3.get_bucket_tagging(Bucket="tags-bucket")["TagSet"]) == 2
    s3.delete_bucket_tagging(Bucket="tags-bucket")
    with pytest.raises(ClientError) as e:
        s3.get_bucket_tagging(Bucket="tags-bucket")
    assert code(e) == "NoSuchTagSet"


def test_tagging_actions_in_policies(s3: BaseClient) -> None:
    s3.create_bucket(Bucket="tags-pol")
    s3.put_object(Bucket="tags-pol", Key="k", Body=b"x", Tagging="a=1")
    deny = {"Version": "2012-10-17", "Statement": [{"Effect": "Deny", "Principal": "*",
                                                     "Action": ["s3:PutObjectTagging", "s3:DeleteObjectTagging"],
                                                     "Resource": "arn:aws:s3:::tags-pol/*"}]}
    s3.put_bucket_policy(Bucket="tags-pol", Policy=json.dumps(deny))
    for call in (lambda: s3.put_object_tagging(Bucket="tags-pol", Key="k", Tagging=tag_set({"a": "3"})),
                 lambda: s3.delete_object_tagging(Bucket="tags-pol", Key="k")):
        with pytest.raises(ClientError) as e:
            call()
        assert code(e) == "AccessDenied"
    assert tags(s3, "tags-pol", "k") == {"a": "1"}  # GetObjectTagging is not denied; nothing changed
    s3.put_object(Bucket="tags-pol", Key="plain", Body=b"y")  # PutObject is not a tagging action
    deny["Statement"][0]["Action"] = "s3:GetObjectTagging"
    s3.put_bucket_policy(Bucket="tags-pol", Policy=json.dumps(deny))
    with pytest.raises(ClientError) as e:
        s3.get_object_tagging(Bucket="tags-pol", Key="k")
    assert code(e) == "AccessDenied"
    assert s3.get_object(Bucket="tags-pol", Key="k")["Body"].read() == b"x"
