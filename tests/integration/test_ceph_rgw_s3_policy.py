"""Canned ACLs and bucket policies with conditions, through real boto3 (signed and UNSIGNED), urllib and
http.client bound to another loopback address, against the RGW gateway over an in-process Ceph cluster.

The gateway listens on 127.0.0.1; a client bound to 127.0.0.2 is another host as far as aws:SourceIp
goes (the twin gives every emulated host its own 127.x address)."""

from __future__ import annotations

import http.client
import json
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import boto3
import botocore
import pytest
from botocore.client import BaseClient
from botocore.config import Config
from botocore.exceptions import ClientError

from services.ceph.rgw.bucket_index import meta_name
from services.ceph.rgw.cluster_setup import DATA_POOL, INDEX_POOL, rgw_cluster
from services.ceph.rgw.gateway import Gateway
from services.ceph.rgw.http import RunningServer, start_in_thread, tls_context
from services.ceph.rgw.users import User, Users

OWNER = User("owner", "Bucket Owner", "AKIAOWNER0000000", "owner-secret")
BOB = User("bob", "Bob", "AKIABOB000000000", "bob-secret")
EVE = User("eve", "Eve", "AKIAEVE000000000", "eve-secret")
OTHER_HOST = "127.0.0.2"


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Gateway, RunningServer, RunningServer, Path]]:
    gw = Gateway(rgw_cluster(12), Users([OWNER, BOB, EVE]), DATA_POOL, INDEX_POOL, op_timeout=0.5)
    d = tmp_path_factory.mktemp("tls")
    cert, key = d / "cert.pem", d / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    plain, tls = start_in_thread(gw), start_in_thread(gw, tls=tls_context(cert, key))
    yield gw, plain, tls, cert
    plain.stop()
    tls.stop()


@pytest.fixture(scope="module")
def port(gateway: tuple[Gateway, RunningServer, RunningServer, Path]) -> int:
    return gateway[1].port


def client(port: int, user: User | None, source: str | None = None) -> BaseClient:
    """boto3 as `user` (None: UNSIGNED, anonymous), optionally from another loopback address."""
    creds = {} if user is None else {"aws_access_key_id": user.access_key, "aws_secret_access_key": user.secret_key}
    c = boto3.client("s3", endpoint_url=f"http://127.0.0.1:{port}", region_name="us-east-1", **creds,
                     config=Config(signature_version=botocore.UNSIGNED if user is None else "s3v4",
                                   s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
    if source is not None:
        # botocore has no option for the local address; its urllib3 PoolManager passes this to every connection
        c._endpoint.http_session._manager.connection_pool_kw["source_address"] = (source, 0)
    return c


def code(err: pytest.ExceptionInfo[ClientError]) -> str:
    return str(err.value.response["Error"]["Code"])


def denied(fn, **kw) -> str:  # type: ignore[no-untyped-def]
    with pytest.raises(ClientError) as e:
        fn(**kw)
    return code(e)


def raw(port: int, method: str, path: str, source: str = "127.0.0.1", body: bytes = b"") -> tuple[int, bytes]:
    """An anonymous request with http.client, bound to `source`."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10, source_address=(source, 0))
    try:
        conn.request(method, path, body=body or None)
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


def put_policy(s3: BaseClient, bucket: str, *statements: dict) -> None:  # type: ignore[type-arg]
    s3.put_bucket_policy(Bucket=bucket, Policy=json.dumps({"Version": "2012-10-17", "Statement": list(statements)}))


@pytest.fixture(scope="module")
def owner(port: int) -> BaseClient:
    return client(port, OWNER)


def test_private_by_default_anonymous_and_other_users_denied(port: int, owner: BaseClient) -> None:
    owner.create_bucket(Bucket="private-b")
    owner.put_object(Bucket="private-b", Key="k", Body=b"secret")
    anon, bob = client(port, None), client(port, BOB)
    assert denied(anon.get_object, Bucket="private-b", Key="k") == "AccessDenied"
    assert denied(anon.list_objects_v2, Bucket="private-b") == "AccessDenied"
    assert denied(anon.put_object, Bucket="private-b", Key="new", Body=b"x") == "AccessDenied"
    assert denied(anon.list_buckets) == "AccessDenied"
    assert denied(anon.get_object, Bucket="no-such-bucket", Key="k") == "AccessDenied"  # existence not revealed
    status, body = raw(port, "GET", "/private-b/k")
    assert status == 403 and b"<Code>AccessDenied</Code>" in body
    assert denied(bob.get_object, Bucket="private-b", Key="k") == "AccessDenied"
    assert denied(bob.list_objects_v2, Bucket="private-b") == "AccessDenied"
    assert denied(bob.delete_object, Bucket="private-b", Key="k") == "AccessDenied"
    assert denied(bob.get_bucket_acl, Bucket="private-b") == "AccessDenied"
    assert denied(bob.delete_bucket, Bucket="private-b") == "AccessDenied"
    assert denied(bob.get_object, Bucket="no-such-bucket", Key="k") == "NoSuchBucket"
    assert owner.get_object(Bucket="private-b", Key="k")["Body"].read() == b"secret"
    acl = owner.get_bucket_acl(Bucket="private-b")
    assert acl["Owner"]["ID"] == "owner"
    assert [(g["Grantee"].get("ID"), g["Permission"]) for g in acl["Grants"]] == [("owner", "FULL_CONTROL")]


def test_public_read_bucket_readable_anonymously_not_writable(port: int, owner: BaseClient) -> None:
    owner.create_bucket(Bucket="public-b", ACL="public-read")
    owner.put_object(Bucket="public-b", Key="open.txt", Body=b"hello", ACL="public-read")
    owner.put_object(Bucket="public-b", Key="closed.txt", Body=b"nope")
    anon = client(port, None)
    assert [o["Key"] for o in anon.list_objects_v2(Bucket="public-b")["Contents"]] == ["closed.txt", "open.txt"]
    assert anon.get_object(Bucket="public-b", Key="open.txt")["Body"].read() == b"hello"
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/public-b/open.txt", timeout=10) as r:
        assert r.read() == b"hello"
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/public-b/closed.txt", timeout=10)
    assert e.value.code == 403  # the object's own ACL is private
    assert denied(anon.put_object, Bucket="public-b", Key="graffiti", Body=b"x") == "AccessDenied"
    assert denied(anon.delete_object, Bucket="public-b", Key="open.txt") == "AccessDenied"
    assert anon.get_object_tagging(Bucket="public-b", Key="open.txt")["TagSet"] == []  # READ reads the tags
    assert denied(anon.get_object_tagging, Bucket="public-b", Key="closed.txt") == "AccessDenied"
    assert denied(anon.put_object_tagging, Bucket="public-b", Key="open.txt",
                  Tagging={"TagSet": [{"Key": "k", "Value": "v"}]}) == "AccessDenied"
    assert raw(port, "PUT", "/public-b/graffiti", body=b"x")[0] == 403
    assert denied(anon.get_bucket_acl, Bucket="public-b") == "AccessDenied"
    grants = owner.get_bucket_acl(Bucket="public-b")["Grants"]
    assert {"Grantee": {"Type": "Group", "URI": "http://acs.amazonaws.com/groups/global/AllUsers"},
            "Permission": "READ"} in grants
    obj = owner.get_object_acl(Bucket="public-b", Key="open.txt")
    assert obj["Owner"]["ID"] == "owner" and len(obj["Grants"]) == 2


def test_put_acl_canned_xml_and_object_ownership(port: int, owner: BaseClient) -> None:
    owner.create_bucket(Bucket="acl-b")
    anon, bob, eve = client(port, None), client(port, BOB), client(port, EVE)
    owner.put_bucket_acl(Bucket="acl-b", ACL="public-read-write")
    anon.put_object(Bucket="acl-b", Key="dropped", Body=b"anon")
    anon.delete_object(Bucket="acl-b", Key="dropped")
    owner.put_bucket_acl(Bucket="acl-b", ACL="authenticated-read")
    assert denied(anon.list_objects_v2, Bucket="acl-b") == "AccessDenied"
    assert bob.list_objects_v2(Bucket="acl-b")["KeyCount"] == 0
    assert denied(bob.put_object, Bucket="acl-b", Key="x", Body=b"x") == "AccessDenied"
    # an XML AccessControlPolicy granting one user WRITE on the bucket
    owner.put_bucket_acl(Bucket="acl-b", AccessControlPolicy={
        "Owner": {"ID": "owner"},
        "Grants": [{"Grantee": {"Type": "CanonicalUser", "ID": "bob"}, "Permission": "WRITE"}]})
    assert [g["Grantee"].get("ID") for g in owner.get_bucket_acl(Bucket="acl-b")["Grants"]] == ["owner", "bob"]
    # bob's object is bob's: the bucket owner reads it only if bob's ACL lets it
    bob.put_object(Bucket="acl-b", Key="bobs", Body=b"mine")
    assert denied(owner.get_object, Bucket="acl-b", Key="bobs") == "AccessDenied"
    bob.put_object(Bucket="acl-b", Key="shared", Body=b"ours", ACL="bucket-owner-full-control")
    assert owner.get_object(Bucket="acl-b", Key="shared")["Body"].read() == b"ours"
    bob.put_object_acl(Bucket="acl-b", Key="bobs", ACL="bucket-owner-read")
    assert owner.get_object(Bucket="acl-b", Key="bobs")["Body"].read() == b"mine"
    assert denied(eve.get_object, Bucket="acl-b", Key="bobs") == "AccessDenied"
    bob.put_object_acl(Bucket="acl-b", Key="bobs", AccessControlPolicy={
        "Owner": {"ID": "bob"}, "Grants": [{"Grantee": {"Type": "CanonicalUser", "ID": "eve"}, "Permission": "READ"}]})
    assert eve.get_object(Bucket="acl-b", Key="bobs")["Body"].read() == b"mine"
    got = bob.get_object_acl(Bucket="acl-b", Key="bobs")
    assert got["Owner"] == {"ID": "bob", "DisplayName": "Bob"}
    assert denied(owner.put_bucket_acl, Bucket="acl-b", ACL="world-writable") == "InvalidArgument"
    owner.delete_object(Bucket="acl-b", Key="bobs")  # bucket WRITE (the owner's) deletes any object
    owner.delete_object(Bucket="acl-b", Key="shared")


def test_source_ip_allow_and_deny_ranges(port: int, owner: BaseClient) -> None:
    owner.create_bucket(Bucket="ip-b")
    owner.put_object(Bucket="ip-b", Key="data", Body=b"by address")
    put_policy(owner, "ip-b", {"Sid": "only-from-host-1", "Effect": "Allow", "Principal": "*",
                               "Action": "s3:GetObject", "Resource": "arn:aws:s3:::ip-b/*",
                               "Condition": {"IpAddress": {"aws:SourceIp": "127.0.0.1/32"}}})
    assert client(port, None).get_object(Bucket="ip-b", Key="data")["Body"].read() == b"by address"
    assert denied(client(port, None, OTHER_HOST).get_object, Bucket="ip-b", Key="data") == "AccessDenied"
    assert raw(port, "GET", "/ip-b/data")[0] == 200
    assert raw(port, "GET", "/ip-b/data", source=OTHER_HOST)[0] == 403
    # allow the whole loopback network, deny one range in it: the Deny wins where both apply
    put_policy(owner, "ip-b",
               {"Effect": "Allow", "Principal": "*", "Action": "s3:Get*", "Resource": "arn:aws:s3:::ip-b/*",
                "Condition": {"IpAddress": {"aws:SourceIp": ["127.0.0.0/8", "::1/128"]}}},
               {"Effect": "Deny", "Principal": "*", "Action": "s3:*", "Resource": "arn:aws:s3:::ip-b/*",
                "Condition": {"IpAddress": {"aws:SourceIp": "127.0.0.2/31"}}})
    assert raw(port, "GET", "/ip-b/data")[0] == 200
    assert raw(port, "GET", "/ip-b/data", source="127.0.0.4")[0] == 200
    assert raw(port, "GET", "/ip-b/data", source=OTHER_HOST)[0] == 403
    assert raw(port, "GET", "/ip-b/data", source="127.0.0.3")[0] == 403
    # the Deny binds the owner too, from the denied host
    assert denied(client(port, OWNER, OTHER_HOST).get_object, Bucket="ip-b", Key="data") == "AccessDenied"
    assert client(port, OWNER).get_object(Bucket="ip-b", Key="data")["Body"].read() == b"by address"
    # NotIpAddress: nothing from outside 127.0.0.1/32, anonymous or not
    put_policy(owner, "ip-b", {"Effect": "Deny", "Principal": "*", "Action": "s3:*",
                               "Resource": ["arn:aws:s3:::ip-b", "arn:aws:s3:::ip-b/*"],
                               "Condition": {"NotIpAddress": {"aws:SourceIp": "127.0.0.1/32"}}})
    assert denied(client(port, OWNER, OTHER_HOST).list_objects_v2, Bucket="ip-b") == "AccessDenied"
    assert client(port, OWNER).list_objects_v2(Bucket="ip-b")["KeyCount"] == 1
    # the owner can always manage the policy, even from a denied address
    client(port, OWNER, OTHER_HOST).delete_bucket_policy(Bucket="ip-b")
    assert client(port, OWNER, OTHER_HOST).list_objects_v2(Bucket="ip-b")["KeyCount"] == 1


def test_second_user_denied_by_default_allowed_by_principal(port: int, owner: BaseClient) -> None:
    owner.create_bucket(Bucket="share-b")
    for k in ("home/bob/notes", "home/eve/notes", "readme"):
        owner.put_object(Bucket="share-b", Key=k, Body=k.encode())
    bob, eve = client(port, BOB), client(port, EVE)
    assert denied(bob.get_object, Bucket="share-b", Key="readme") == "AccessDenied"
    put_policy(owner, "share-b",
               {"Sid": "bob-reads", "Effect": "Allow", "Principal": {"AWS": ["arn:aws:iam:::user/bob"]},
                "Action": ["s3:GetObject"], "Resource": "arn:aws:s3:::share-b/*"},
               {"Sid": "bob-lists-his-home", "Effect": "Allow", "Principal": {"AWS": "arn:aws:iam:::user/bob"},
                "Action": "s3:ListBucket", "Resource": "arn:aws:s3:::share-b",
                "Condition": {"StringLike": {"s3:prefix": "home/${aws:username}/*", "aws:username": "bob"}}},
               {"Sid": "bob-lists-his-home-2", "Effect": "Allow", "Principal": {"AWS": "arn:aws:iam:::user/bob"},
                "Action": "s3:ListBucket", "Resource": "arn:aws:s3:::share-b",
                "Condition": {"StringEquals": {"s3:prefix": "home/bob/"}}})
    assert bob.get_object(Bucket="share-b", Key="readme")["Body"].read() == b"readme"
    assert [o["Key"] for o in bob.list_objects_v2(Bucket="share-b", Prefix="home/bob/")["Contents"]] == [
        "home/bob/notes"]
    assert denied(bob.list_objects_v2, Bucket="share-b") == "AccessDenied"  # s3:prefix "" does not match
    assert denied(bob.list_objects_v2, Bucket="share-b", Prefix="home/eve/") == "AccessDenied"
    assert denied(bob.put_object, Bucket="share-b", Key="readme", Body=b"x") == "AccessDenied"
    assert denied(bob.delete_object, Bucket="share-b", Key="readme") == "AccessDenied"
    assert denied(bob.get_bucket_policy, Bucket="share-b") == "AccessDenied"
    assert denied(eve.get_object, Bucket="share-b", Key="readme") == "AccessDenied"
    assert denied(client(port, None).get_object, Bucket="share-b", Key="readme") == "AccessDenied"
    # aws:username and StringNotEquals: everyone but eve may read
    put_policy(owner, "share-b", {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
                                  "Resource": "arn:aws:s3:::share-b/*",
                                  "Condition": {"StringNotEquals": {"aws:username": "eve"}}})
    assert bob.get_object(Bucket="share-b", Key="readme")["Body"].read() == b"readme"
    assert client(port, None).get_object(Bucket="share-b", Key="readme")["Body"].read() == b"readme"
    assert denied(eve.get_object, Bucket="share-b", Key="readme") == "AccessDenied"


def test_explicit_deny_beats_allow(port: int, owner: BaseClient) -> None:
    owner.create_bucket(Bucket="deny-b")
    owner.put_object(Bucket="deny-b", Key="public/a", Body=b"a", ACL="public-read")
    owner.put_object(Bucket="deny-b", Key="secret/b", Body=b"b", ACL="public-read")
    bob = client(port, BOB)
    put_policy(owner, "deny-b",
               {"Sid": "bob-all", "Effect": "Allow", "Principal": {"AWS": "arn:aws:iam:::user/bob"}, "Action": "s3:*",
                "Resource": ["arn:aws:s3:::deny-b", "arn:aws:s3:::deny-b/*"]},
               {"Sid": "no-secrets", "Effect": "Deny", "Principal": {"AWS": ["arn:aws:iam:::user/bob"]},
                "Action": ["s3:Get*", "s3:PutObject"], "Resource": "arn:aws:s3:::deny-b/secret/*"})
    assert bob.get_object(Bucket="deny-b", Key="public/a")["Body"].read() == b"a"
    bob.put_object(Bucket="deny-b", Key="public/new", Body=b"n")
    assert bob.list_objects_v2(Bucket="deny-b")["KeyCount"] == 3
    # Allow s3:* and a public-read ACL both say yes; the explicit Deny still wins
    assert denied(bob.get_object, Bucket="deny-b", Key="secret/b") == "AccessDenied"
    assert denied(bob.put_object, Bucket="deny-b", Key="secret/c", Body=b"c") == "AccessDenied"
    bob.delete_object(Bucket="deny-b", Key="public/new")  # not denied: DeleteObject is not in the Deny
    assert client(port, None).get_object(Bucket="deny-b", Key="secret/b")["Body"].read() == b"b"  # ACL, no Deny
    # DeleteObjects checks every key on its own
    put_policy(owner, "deny-b", {"Effect": "Allow", "Principal": {"AWS": "arn:aws:iam:::user/bob"},
                                 "Action": "s3:DeleteObject", "Resource": "arn:aws:s3:::deny-b/public/*"})
    r = bob.delete_objects(Bucket="deny-b", Delete={"Objects": [{"Key": "public/a"}, {"Key": "secret/b"}]})
    assert [d["Key"] for d in r["Deleted"]] == ["public/a"]
    assert [(e["Key"], e["Code"]) for e in r["Errors"]] == [("secret/b", "AccessDenied")]
    # and a copy needs read access to its source: a public-read object copies, a private one does not
    owner.put_object(Bucket="deny-b", Key="private/c", Body=b"c")
    bob.create_bucket(Bucket="bobs-b")
    bob.copy_object(Bucket="bobs-b", Key="copied", CopySource={"Bucket": "deny-b", "Key": "secret/b"})
    assert bob.get_object(Bucket="bobs-b", Key="copied")["Body"].read() == b"b"
    assert denied(bob.copy_object, Bucket="bobs-b", Key="stolen",
                  CopySource={"Bucket": "deny-b", "Key": "private/c"}) == "AccessDenied"


def test_malformed_policy_refused_and_nothing_changes(gateway: tuple[Gateway, RunningServer, RunningServer, Path],
                                                      port: int, owner: BaseClient) -> None:
    gw = gateway[0]
    owner.create_bucket(Bucket="malformed-b")
    assert denied(owner.get_bucket_policy, Bucket="malformed-b") == "NoSuchBucketPolicy"
    good = {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::malformed-b/*"}
    put_policy(owner, "malformed-b", good)
    before = owner.get_bucket_policy(Bucket="malformed-b")["Policy"]
    assert gw.cluster.get(INDEX_POOL, meta_name("", "malformed-b", "policy")).decode() == before  # kept in RADOS
    bad_documents = [
        "{not json",
        json.dumps({"Version": "2012-10-17"}),
        json.dumps({"Version": "2099-01-01", "Statement": [good]}),
        json.dumps({"Version": "2012-10-17", "Statement": [{**good, "Effect": "Maybe"}]}),
        json.dumps({"Version": "2012-10-17", "Statement": [{**good, "Action": "s3:FlyToTheMoon"}]}),
        json.dumps({"Version": "2012-10-17", "Statement": [{**good, "Action": "ec2:RunInstances"}]}),
        json.dumps({"Version": "2012-10-17", "Statement": [{**good, "Resource": "arn:aws:s3:::other-bucket/*"}]}),
        json.dumps({"Version": "2012-10-17", "Statement": [{k: v for k, v in good.items() if k != "Principal"}]}),
        json.dumps({"Version": "2012-10-17", "Statement": [{**good, "Principal": {"AWS": "not an arn"}}]}),
        json.dumps({"Version": "2012-10-17", "Statement": [{**good, "Condition": {"IpAddress": {
            "aws:SourceIp": "300.1.2.3/8"}}}]}),
        json.dumps({"Version": "2012-10-17", "Statement": [{**good, "Condition": {"StringSortOf": {
            "s3:prefix": "x"}}}]}),
        json.dumps({"Version": "2012-10-17", "Statement": [{**good, "Colour": "blue"}]}),
    ]
    for doc in bad_documents:
        with pytest.raises(ClientError) as e:
            owner.put_bucket_policy(Bucket="malformed-b", Policy=doc)
        assert code(e) == "MalformedPolicy", doc
        assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
        assert owner.get_bucket_policy(Bucket="malformed-b")["Policy"] == before
    assert denied(client(port, BOB).put_bucket_policy, Bucket="malformed-b", Policy=json.dumps(
        {"Version": "2012-10-17", "Statement": [good]})) == "AccessDenied"
    owner.delete_bucket_policy(Bucket="malformed-b")
    assert denied(owner.get_bucket_policy, Bucket="malformed-b") == "NoSuchBucketPolicy"
    owner.delete_bucket(Bucket="malformed-b")


def test_secure_transport_and_current_time(gateway: tuple[Gateway, RunningServer, RunningServer, Path],
                                           port: int, owner: BaseClient) -> None:
    _, _, tls, cert = gateway
    owner.create_bucket(Bucket="tls-only-b")
    owner.put_object(Bucket="tls-only-b", Key="k", Body=b"over tls")
    put_policy(owner, "tls-only-b",
               {"Sid": "https-only", "Effect": "Deny", "Principal": "*", "Action": "s3:*",
                "Resource": ["arn:aws:s3:::tls-only-b", "arn:aws:s3:::tls-only-b/*"],
                "Condition": {"Bool": {"aws:SecureTransport": "false"}}})
    assert denied(owner.get_object, Bucket="tls-only-b", Key="k") == "AccessDenied"  # http: the owner too
    assert denied(owner.list_objects_v2, Bucket="tls-only-b") == "AccessDenied"
    secure = boto3.client("s3", endpoint_url=f"https://127.0.0.1:{tls.port}", region_name="us-east-1",
                          aws_access_key_id=OWNER.access_key, aws_secret_access_key=OWNER.secret_key,
                          verify=str(cert), config=Config(signature_version="s3v4", s3={"addressing_style": "path"}))
    assert secure.get_object(Bucket="tls-only-b", Key="k")["Body"].read() == b"over tls"
    # aws:CurrentTime: a grant that has not started yet, and one that has
    owner.delete_bucket_policy(Bucket="tls-only-b")  # over http: the owner may always manage the policy
    owner.put_object(Bucket="tls-only-b", Key="k", Body=b"timed", ACL="private")
    anon = client(port, None)
    put_policy(owner, "tls-only-b", {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
                                     "Resource": "arn:aws:s3:::tls-only-b/*",
                                     "Condition": {"DateGreaterThan": {"aws:CurrentTime": "2999-01-01T00:00:00Z"}}})
    assert denied(anon.get_object, Bucket="tls-only-b", Key="k") == "AccessDenied"
    put_policy(owner, "tls-only-b", {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
                                     "Resource": "arn:aws:s3:::tls-only-b/*",
                                     "Condition": {"DateGreaterThan": {"aws:CurrentTime": "2020-01-01T00:00:00Z"},
                                                   "DateLessThan": {"aws:CurrentTime": "2999-01-01T00:00:00Z"}}})
    assert anon.get_object(Bucket="tls-only-b", Key="k")["Body"].read() == b"timed"


def test_policy_evaluation_rules() -> None:
    """The evaluator on its own: operators, missing keys, set qualifiers, NotAction/NotResource, wildcards."""
    from services.ceph.rgw import policy

    def verdict(statement: dict, action: str = "s3:GetObject", key: str | None = "a/b",  # type: ignore[type-arg]
                who: policy.Requester | None = None, **ctx: list[str]) -> str | None:
        base = {"Effect": "Allow", "Principal": "*", "Resource": "arn:aws:s3:::b/*", "Action": "s3:*"}
        for name in ("Principal", "Resource", "Action"):
            if f"Not{name}" in statement:
                del base[name]
        doc = policy.parse(json.dumps({"Version": "2012-10-17", "Statement": [{**base, **statement}]}), "b")
        return doc.evaluate(who or policy.Requester("bob"), action, policy.resource("b", key),
                            {k.replace("_", ":", 1).lower(): v for k, v in ctx.items()})

    assert verdict({"Action": "s3:get*"}) == "Allow"  # actions are case-insensitive
    assert verdict({"Action": "s3:Put*"}) is None
    assert verdict({"NotAction": "s3:PutObject"}) == "Allow"
    assert verdict({"NotAction": "s3:GetObject"}) is None
    assert verdict({"Resource": "arn:aws:s3:::b/a/?"}) == "Allow"
    assert verdict({"Resource": "arn:aws:s3:::b/x/*"}) is None
    assert verdict({"NotResource": "arn:aws:s3:::b/x/*"}) == "Allow"
    assert verdict({"Principal": {"AWS": "arn:aws:iam:::user/bob"}}) == "Allow"
    assert verdict({"Principal": {"AWS": "arn:aws:iam:::user/bob"}}, who=policy.Requester("")) is None
    assert verdict({"Principal": {"AWS": "arn:aws:iam::lab:root"}}, who=policy.Requester("bob", "lab")) == "Allow"
    assert verdict({"NotPrincipal": {"AWS": "arn:aws:iam:::user/bob"}}) is None
    # a key the request lacks: false, except for negated and IfExists operators; Null tests for it
    assert verdict({"Condition": {"StringEquals": {"s3:prefix": "x"}}}) is None
    assert verdict({"Condition": {"StringNotEquals": {"s3:prefix": "x"}}}) == "Allow"
    assert verdict({"Condition": {"StringEqualsIfExists": {"s3:prefix": "x"}}}) == "Allow"
    assert verdict({"Condition": {"Null": {"s3:prefix": "true"}}}) == "Allow"
    assert verdict({"Condition": {"Null": {"s3:prefix": "false"}}}) is None
    # values of one key are ORed, keys and operators ANDed
    assert verdict({"Condition": {"StringLike": {"s3:prefix": ["x*", "home/*"]}}}, s3_prefix=["home/bob/"]) == "Allow"
    assert verdict({"Condition": {"StringLike": {"s3:prefix": "home/*"}, "NumericLessThan": {"s3:max-keys": 10}}},
                   s3_prefix=["home/"], **{"s3_max-keys": ["100"]}) is None
    assert verdict({"Condition": {"NumericLessThanEquals": {"s3:max-keys": "100"}}},
                   **{"s3_max-keys": ["100"]}) == "Allow"
    assert verdict({"Condition": {"StringEqualsIgnoreCase": {"aws:username": "BOB"}}}, aws_username=["bob"]) == "Allow"
    assert verdict({"Condition": {"ForAnyValue:StringEquals": {"aws:username": ["x", "bob"]}}},
                   aws_username=["bob"]) == "Allow"
    assert verdict({"Condition": {"IpAddress": {"aws:SourceIp": "10.0.0.0/8"}}}, aws_SourceIp=["10.1.2.3"]) == "Allow"
    assert verdict({"Condition": {"IpAddress": {"aws:SourceIp": "10.0.0.0/8"}}}, aws_SourceIp=["11.1.2.3"]) is None
    assert verdict({"Condition": {"IpAddress": {"aws:SourceIp": "::1/128"}}}, aws_SourceIp=["::1"]) == "Allow"
    assert verdict({"Condition": {"Bool": {"aws:SecureTransport": True}}}, aws_SecureTransport=["true"]) == "Allow"
    assert verdict({"Condition": {"DateLessThan": {"aws:CurrentTime": "2030-01-01T00:00:00Z"}}},
                   aws_CurrentTime=["2026-06-01T00:00:00Z"]) == "Allow"
    assert verdict({"Condition": {"DateGreaterThan": {"aws:EpochTime": "1700000000"}}},
                   aws_EpochTime=["1600000000"]) is None
    # a Deny anywhere wins
    doc = policy.parse(json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": "*", "Action": "s3:*", "Resource": "arn:aws:s3:::b/*"},
        {"Effect": "Deny", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::b/private/*"}]}), "b")
    assert doc.evaluate(policy.Requester("bob"), "s3:GetObject", "arn:aws:s3:::b/private/x", {}) == "Deny"
    assert doc.evaluate(policy.Requester("bob"), "s3:GetObject", "arn:aws:s3:::b/public/x", {}) == "Allow"
    # operations map to their actions
    assert policy.action("GET", "b", "k", {"versionId": "v"}) == "s3:GetObjectVersion"
    assert policy.action("PUT", "b", "", {"policy": ""}) == "s3:PutBucketPolicy"
    assert policy.action("DELETE", "b", "k", {"uploadId": "u"}) == "s3:AbortMultipartUpload"
    assert policy.action("HEAD", "b", "", {}) == "s3:ListBucket"
    assert policy.action("GET", "", "", {}) == "s3:ListAllMyBuckets"
