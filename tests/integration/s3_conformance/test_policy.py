"""Bucket policies and public access as RGW (Squid) answers them, against the deployed twin:
s3:ExistingObjectTag conditions (ceph/s3-tests test_bucket_policy_get_obj_existing_tag,
test_bucket_policy_get_obj_tagging_existing_tag), NotPrincipal, GetBucketPolicyStatus
(test_get_*_bucket_policy_status), PublicAccessBlock (test_get_default_public_block,
test_put_public_block, test_block_public_put_bucket_acls, test_block_public_object_canned_acls,
test_block_public_policy, test_block_public_policy_with_principal, test_ignore_public_acls), and a HEAD
of a missing object: 404 for who may list the bucket, 403 for anyone else (RGW's read_obj_policy)."""

from __future__ import annotations

import json

import pytest
import requests
from botocore.client import BaseClient
from botocore.exceptions import ClientError

from tests.integration.s3_conformance.s3_twin import BOB, S3Twin, error

CLOSED = {"BlockPublicAcls": False, "IgnorePublicAcls": False, "BlockPublicPolicy": False,
          "RestrictPublicBuckets": False}




@pytest.fixture(scope="module")
def bob(twin: S3Twin) -> BaseClient:
    return twin.client(BOB)


def doc(*statements: dict[str, object]) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": list(statements)})


def allow(action: str, resource: str, principal: object = None, **more: object) -> dict[str, object]:
    return {"Effect": "Allow", "Principal": principal or {"AWS": "*"}, "Action": action,
            "Resource": f"arn:aws:s3:::{resource}", **more}


def refused(fn, **kw: object) -> tuple[int, str]:  # type: ignore[no-untyped-def]
    with pytest.raises(ClientError) as e:
        fn(**kw)
    return error(e)


def test_existing_object_tag_conditions(s3: BaseClient, bob: BaseClient) -> None:
    s3.create_bucket(Bucket="tagged")
    tags = {"publictag": [("security", "public"), ("foo", "bar")], "privatetag": [("security", "private")],
            "invalidtag": [("security1", "public")]}
    for key, tagset in tags.items():
        s3.put_object(Bucket="tagged", Key=key, Body=key.encode())
        s3.put_object_tagging(Bucket="tagged", Key=key,
                              Tagging={"TagSet": [{"Key": k, "Value": v} for k, v in tagset]})
    public = {"StringEquals": {"s3:ExistingObjectTag/security": "public"}}
    s3.put_bucket_policy(Bucket="tagged", Policy=doc(
        allow("s3:GetObject", "tagged/*", Condition=public),
        allow("s3:GetObjectTagging", "tagged/*", Condition=public)))
    assert bob.get_object(Bucket="tagged", Key="publictag")["Body"].read() == b"publictag"
    assert len(bob.get_object_tagging(Bucket="tagged", Key="publictag")["TagSet"]) == 2
    for key in ("privatetag", "invalidtag"):
        assert refused(bob.get_object, Bucket="tagged", Key=key) == (403, "AccessDenied")
        assert refused(bob.get_object_tagging, Bucket="tagged", Key=key) == (403, "AccessDenied")
    # the condition reads the tags the object has now
    s3.put_object_tagging(Bucket="tagged", Key="privatetag", Tagging={"TagSet": [{"Key": "security",
                                                                                  "Value": "public"}]})
    assert bob.get_object(Bucket="tagged", Key="privatetag")["Body"].read() == b"privatetag"


def test_existing_object_tag_on_put_object_tagging(s3: BaseClient, bob: BaseClient) -> None:
    s3.create_bucket(Bucket="retag")
    s3.put_object(Bucket="retag", Key="publictag", Body=b"x")
    s3.put_object_tagging(Bucket="retag", Key="publictag", Tagging={"TagSet": [{"Key": "security",
                                                                                "Value": "public"}]})
    s3.put_bucket_policy(Bucket="retag", Policy=doc(allow("s3:PutObjectTagging", "retag/*", Condition={
        "StringEquals": {"s3:ExistingObjectTag/security": "public"}})))
    public = {"TagSet": [{"Key": "security", "Value": "public"}, {"Key": "foo", "Value": "bar"}]}
    bob.put_object_tagging(Bucket="retag", Key="publictag", Tagging=public)
    bob.put_object_tagging(Bucket="retag", Key="publictag", Tagging={"TagSet": [{"Key": "security",
                                                                                 "Value": "private"}]})
    # the tags it has now are private: putting the public ones back is refused
    assert refused(bob.put_object_tagging, Bucket="retag", Key="publictag", Tagging=public) == (403, "AccessDenied")
    assert s3.get_object_tagging(Bucket="retag", Key="publictag")["TagSet"] == [{"Key": "security",
                                                                                 "Value": "private"}]


def test_not_principal(s3: BaseClient, bob: BaseClient) -> None:
    s3.create_bucket(Bucket="notprinc", ACL="public-read")
    s3.put_object(Bucket="notprinc", Key="k", Body=b"v")
    s3.put_bucket_policy(Bucket="notprinc", Policy=doc({
        "Effect": "Deny", "NotPrincipal": {"AWS": "arn:aws:iam:::user/alice"}, "Action": "s3:GetObject",
        "Resource": "arn:aws:s3:::notprinc/*"}))
    assert refused(bob.get_object, Bucket="notprinc", Key="k") == (403, "AccessDenied")
    assert s3.get_object(Bucket="notprinc", Key="k")["Body"].read() == b"v"
    assert bob.list_objects_v2(Bucket="notprinc")["KeyCount"] == 1  # the ACL still gives what the Deny leaves
    s3.put_bucket_policy(Bucket="notprinc", Policy=doc({
        "Effect": "Allow", "NotPrincipal": {"AWS": "arn:aws:iam:::user/alice"}, "Action": "s3:PutObject",
        "Resource": "arn:aws:s3:::notprinc/*"}))
    bob.put_object(Bucket="notprinc", Key="from-bob", Body=b"b")  # an Allow to everyone but alice
    assert s3.get_bucket_policy_status(Bucket="notprinc")["PolicyStatus"]["IsPublic"] is True


def test_policy_status(s3: BaseClient) -> None:
    def public(bucket: str) -> bool:
        return bool(s3.get_bucket_policy_status(Bucket=bucket)["PolicyStatus"]["IsPublic"])

    for name in ("st-plain", "st-acl", "st-auth", "st-pol", "st-cond", "st-princ"):
        s3.create_bucket(Bucket=name)
        assert public(name) is False
    s3.put_bucket_acl(Bucket="st-acl", ACL="public-read")
    s3.put_bucket_acl(Bucket="st-auth", ACL="authenticated-read")
    s3.put_bucket_policy(Bucket="st-pol", Policy=doc(allow("s3:ListBucket", "st-pol")))
    s3.put_bucket_policy(Bucket="st-cond", Policy=doc(allow("s3:ListBucket", "st-cond", Condition={
        "IpAddress": {"aws:SourceIp": "10.0.0.0/32"}})))
    s3.put_bucket_policy(Bucket="st-princ", Policy=doc(allow("s3:ListBucket", "st-princ",
                                                             principal={"AWS": "arn:aws:iam:::user/bob"})))
    assert [public(n) for n in ("st-plain", "st-acl", "st-auth", "st-pol", "st-cond", "st-princ")] == [
        False, True, True, True, False, False]
    r = requests.get(f"{s3.meta.endpoint_url}/st-acl?policyStatus", timeout=30)  # the owner's to read
    assert r.status_code == 403


def test_public_access_block_put_get_delete(s3: BaseClient, bob: BaseClient) -> None:
    s3.create_bucket(Bucket="pab")
    assert s3.get_public_access_block(Bucket="pab")["PublicAccessBlockConfiguration"] == CLOSED
    conf = {**CLOSED, "BlockPublicAcls": True, "BlockPublicPolicy": True}
    assert s3.put_public_access_block(Bucket="pab", PublicAccessBlockConfiguration=conf)[
        "ResponseMetadata"]["HTTPStatusCode"] == 200
    assert s3.get_public_access_block(Bucket="pab")["PublicAccessBlockConfiguration"] == conf
    assert refused(bob.get_public_access_block, Bucket="pab") == (403, "AccessDenied")
    assert refused(bob.delete_public_access_block, Bucket="pab") == (403, "AccessDenied")
    assert s3.delete_public_access_block(Bucket="pab")["ResponseMetadata"]["HTTPStatusCode"] == 204
    assert s3.get_public_access_block(Bucket="pab")["PublicAccessBlockConfiguration"] == CLOSED
    s3.put_bucket_acl(Bucket="pab", ACL="public-read")  # no longer blocked
    assert "pab" in [b["Name"] for b in s3.list_buckets()["Buckets"]]  # a DELETE ?publicAccessBlock kept it


def test_block_public_acls(s3: BaseClient) -> None:
    s3.create_bucket(Bucket="pab-acls")
    s3.put_object(Bucket="pab-acls", Key="k", Body=b"v")
    s3.put_public_access_block(Bucket="pab-acls", PublicAccessBlockConfiguration={**CLOSED, "BlockPublicAcls": True})
    for canned in ("public-read", "public-read-write", "authenticated-read"):
        assert refused(s3.put_bucket_acl, Bucket="pab-acls", ACL=canned) == (403, "AccessDenied")
        assert refused(s3.put_object, Bucket="pab-acls", Key="new", Body=b"x", ACL=canned) == (403, "AccessDenied")
        assert refused(s3.put_object_acl, Bucket="pab-acls", Key="k", ACL=canned) == (403, "AccessDenied")
        assert refused(s3.create_multipart_upload, Bucket="pab-acls", Key="mp", ACL=canned) == (403, "AccessDenied")
        assert refused(s3.copy_object, Bucket="pab-acls", Key="copy", ACL=canned,
                       CopySource={"Bucket": "pab-acls", "Key": "k"}) == (403, "AccessDenied")
    assert [o["Key"] for o in s3.list_objects_v2(Bucket="pab-acls")["Contents"]] == ["k"]  # nothing written
    assert len(s3.get_bucket_acl(Bucket="pab-acls")["Grants"]) == 1
    s3.put_object(Bucket="pab-acls", Key="private", Body=b"x", ACL="private")  # private ACLs still go


def test_ignore_public_acls(twin: S3Twin, s3: BaseClient, bob: BaseClient) -> None:
    s3.create_bucket(Bucket="pab-ignore")
    s3.put_bucket_acl(Bucket="pab-ignore", ACL="public-read")
    s3.put_object(Bucket="pab-ignore", Key="key1", Body=b"abcde", ACL="public-read")
    bob.list_objects(Bucket="pab-ignore")
    assert bob.get_object(Bucket="pab-ignore", Key="key1")["Body"].read() == b"abcde"
    assert requests.get(f"{twin.endpoint}/pab-ignore/key1", timeout=30).content == b"abcde"
    s3.put_public_access_block(Bucket="pab-ignore",
                               PublicAccessBlockConfiguration={**CLOSED, "IgnorePublicAcls": True})
    assert refused(bob.list_objects, Bucket="pab-ignore") == (403, "AccessDenied")
    assert refused(bob.get_object, Bucket="pab-ignore", Key="key1") == (403, "AccessDenied")
    assert requests.get(f"{twin.endpoint}/pab-ignore/key1", timeout=30).status_code == 403
    assert s3.get_object(Bucket="pab-ignore", Key="key1")["Body"].read() == b"abcde"  # the owner's own
    assert len(s3.get_bucket_acl(Bucket="pab-ignore")["Grants"]) == 2  # ignored, not removed


def test_block_public_policy(s3: BaseClient, bob: BaseClient) -> None:
    s3.create_bucket(Bucket="pab-policy")
    s3.put_public_access_block(Bucket="pab-policy",
                               PublicAccessBlockConfiguration={**CLOSED, "BlockPublicPolicy": True})
    assert refused(s3.put_bucket_policy, Bucket="pab-policy",
                   Policy=doc(allow("s3:GetObject", "pab-policy/*"))) == (403, "AccessDenied")
    assert refused(s3.get_bucket_policy, Bucket="pab-policy") == (404, "NoSuchBucketPolicy")
    s3.put_bucket_policy(Bucket="pab-policy", Policy=doc(allow("s3:ListBucket", "pab-policy",
                                                               principal={"AWS": "arn:aws:iam:::user/bob"})))
    assert bob.list_objects_v2(Bucket="pab-policy")["KeyCount"] == 0


def test_restrict_public_buckets(twin: S3Twin, s3: BaseClient) -> None:
    s3.create_bucket(Bucket="pab-restrict")
    s3.put_object(Bucket="pab-restrict", Key="k", Body=b"v")
    s3.put_bucket_policy(Bucket="pab-restrict", Policy=doc(allow("s3:GetObject", "pab-restrict/*")))
    assert requests.get(f"{twin.endpoint}/pab-restrict/k", timeout=30).content == b"v"
    s3.put_public_access_block(Bucket="pab-restrict",
                               PublicAccessBlockConfiguration={**CLOSED, "RestrictPublicBuckets": True})
    assert requests.get(f"{twin.endpoint}/pab-restrict/k", timeout=30).status_code == 403


def test_head_of_a_missing_object_is_404_for_who_may_list(twin: S3Twin, s3: BaseClient, bob: BaseClient) -> None:
    s3.create_bucket(Bucket="prefixed")
    s3.put_object(Bucket="prefixed", Key="public/x", Body=b"x")
    s3.put_bucket_policy(Bucket="prefixed", Policy=doc(allow("s3:GetObject", "prefixed/public/*")))
    assert bob.head_object(Bucket="prefixed", Key="public/x")["ContentLength"] == 1
    # may not list the bucket: a missing key is 403, under the granted prefix or not
    assert refused(bob.head_object, Bucket="prefixed", Key="public/missing") == (403, "403")
    assert refused(bob.head_object, Bucket="prefixed", Key="private/missing") == (403, "403")
    s3.put_bucket_policy(Bucket="prefixed", Policy=doc(allow("s3:GetObject", "prefixed/public/*"),
                                                       allow("s3:ListBucket", "prefixed")))
    assert refused(bob.head_object, Bucket="prefixed", Key="public/missing") == (404, "404")
    assert refused(bob.head_object, Bucket="prefixed", Key="private/missing") == (404, "404")
    assert refused(bob.get_object, Bucket="prefixed", Key="private/missing") == (404, "NoSuchKey")
    assert refused(bob.head_object, Bucket="prefixed", Key="private/exists-not-granted") == (404, "404")
    s3.put_object(Bucket="prefixed", Key="private/y", Body=b"y")
    assert refused(bob.head_object, Bucket="prefixed", Key="private/y") == (403, "403")  # exists: GetObject decides
    assert requests.head(f"{twin.endpoint}/prefixed/private/missing", timeout=30).status_code == 404  # anonymous
    s3.put_bucket_policy(Bucket="prefixed", Policy=doc(
        allow("s3:GetObject", "prefixed/public/*"),
        {"Effect": "Deny", "Principal": {"AWS": "*"}, "Action": "s3:ListBucket", "Resource": "arn:aws:s3:::prefixed"}))
    assert refused(bob.head_object, Bucket="prefixed", Key="public/missing") == (403, "403")
    assert bob.head_object(Bucket="prefixed", Key="public/x")["ContentLength"] == 1
    assert refused(s3.head_object, Bucket="prefixed", Key="public/missing") == (404, "404")  # the owner
