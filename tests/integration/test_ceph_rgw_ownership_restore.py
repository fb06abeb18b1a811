"""A bucket's ownership controls and default encryption, and who will own a multipart upload's object,
are kept in the index pool as RGW keeps them in RADOS: a gateway restarted on the same cluster
(restore.py) answers for them as the one before it did. Real boto3 against two gateways over one
in-process cluster, the second restored from the index pool the first wrote."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from types import SimpleNamespace

import boto3
import pytest
from botocore.client import BaseClient
from botocore.config import Config
from botocore.exceptions import ClientError

from services.ceph.cluster import Cluster
from services.ceph.rgw.cluster_setup import DATA_POOL, INDEX_POOL, rgw_cluster
from services.ceph.rgw.gateway import Gateway
from services.ceph.rgw.http import start_in_thread
from services.ceph.rgw.restore import restore
from services.ceph.rgw.users import User, Users

ALICE = User("alice", "Alice", "AKIAALICE0000000", "alice-secret")
BOB = User("bob", "Bob", "AKIABOB000000000", "bob-secret")


class Index:
    """What restore reads of the cluster: its objects, and the names in a pool under a prefix."""

    def __init__(self, cluster: Cluster, users: Users) -> None:
        self.cluster, self.users = cluster, users

    def get(self, pool: str, name: str) -> bytes:
        return self.cluster.get(pool, name)

    def list_objects(self, pool: str, prefix: str) -> list[SimpleNamespace]:
        return [SimpleNamespace(name=n) for pg in self.cluster.pgs.values() if pg.pool.name == pool
                for n in sorted(pg.objects) if n.startswith(prefix)]

    def by_id(self, user_id: str) -> User | None:
        return next((u for u in self.users.all() if u.id == user_id), None)


@pytest.fixture()
def cluster() -> Cluster:
    return rgw_cluster(12)


Clients = tuple[BaseClient, BaseClient]


@pytest.fixture()
def start(cluster: Cluster) -> Iterator[Callable[[], Clients]]:
    """Starts a gateway on the cluster, restored from its index pool; returns (alice's, bob's) clients."""
    users, servers = Users([ALICE, BOB]), []

    def started() -> Clients:
        gw = Gateway(cluster, users, DATA_POOL, INDEX_POOL, op_timeout=0.5)
        index = Index(cluster, users)
        restore(gw.store, index, index)
        servers.append(start_in_thread(gw))
        url = f"http://127.0.0.1:{servers[-1].port}"
        alice, bob = (boto3.client("s3", endpoint_url=url, region_name="us-east-1", aws_access_key_id=u.access_key,
                                   aws_secret_access_key=u.secret_key, config=Config(
                                       s3={"addressing_style": "path"}, retries={"max_attempts": 0}))
                      for u in (ALICE, BOB))
        return alice, bob

    yield started
    for s in servers:
        s.stop()


def test_ownership_and_encryption_outlive_the_gateway(start: Callable[[], Clients]) -> None:
    s3, bob = start()
    s3.create_bucket(Bucket="enforced", ObjectOwnership="BucketOwnerEnforced")
    s3.put_bucket_policy(Bucket="enforced", Policy=json.dumps({"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"AWS": ["arn:aws:iam:::user/bob"]}, "Action": "s3:PutObject",
        "Resource": "arn:aws:s3:::enforced/*"}]}))
    up = bob.create_multipart_upload(Bucket="enforced", Key="mp")["UploadId"]
    etag = bob.upload_part(Bucket="enforced", Key="mp", UploadId=up, PartNumber=1, Body=b"part")["ETag"]
    s3.create_bucket(Bucket="encrypted")
    s3.put_bucket_encryption(Bucket="encrypted", ServerSideEncryptionConfiguration={"Rules": [{
        "ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}, "BucketKeyEnabled": True}]})

    s3, bob = start()  # a new gateway, from the index pool alone
    rules = s3.get_bucket_ownership_controls(Bucket="enforced")["OwnershipControls"]["Rules"]
    assert rules == [{"ObjectOwnership": "BucketOwnerEnforced"}]
    with pytest.raises(ClientError) as e:
        s3.put_bucket_acl(Bucket="enforced", ACL="public-read")
    assert e.value.response["Error"]["Code"] == "AccessControlListNotSupported"
    bob.complete_multipart_upload(Bucket="enforced", Key="mp", UploadId=up,
                                  MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etag}]})
    assert s3.get_object_acl(Bucket="enforced", Key="mp")["Owner"]["ID"] == "alice"
    conf = s3.get_bucket_encryption(Bucket="encrypted")["ServerSideEncryptionConfiguration"]
    assert conf["Rules"] == [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"},
                              "BucketKeyEnabled": True}]
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket="encrypted", Key="k", Body=b"k")
    assert e.value.response["Error"]["Code"] == "InvalidArgument"

    s3.delete_bucket_ownership_controls(Bucket="enforced")
    s3.delete_bucket_encryption(Bucket="encrypted")
    s3, bob = start()  # what was deleted stays deleted
    for call, code in ((lambda: s3.get_bucket_ownership_controls(Bucket="enforced"), "OwnershipControlsNotFoundError"),
                       (lambda: s3.get_bucket_encryption(Bucket="encrypted"),
                        "ServerSideEncryptionConfigurationNotFoundError")):
        with pytest.raises(ClientError) as e:
            call()
        assert e.value.response["Error"]["Code"] == code
    s3.put_object(Bucket="encrypted", Key="k", Body=b"k")
