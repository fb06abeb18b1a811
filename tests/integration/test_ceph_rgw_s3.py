"""Real boto3 against the RGW S3 gateway over an in-process Ceph cluster (12 hosts, EC 8+3)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from botocore.client import BaseClient
from botocore.config import Config
from botocore.exceptions import ClientError

from services.ceph.pg import PgState
from services.ceph.rgw.cluster_setup import DATA_POOL, INDEX_POOL, rgw_cluster
from services.ceph.rgw.gateway import Gateway
from services.ceph.rgw.http import RunningServer, start_in_thread
from services.ceph.rgw.users import User, Users

ALICE = User("alice", "Alice", "AKIAALICE0000000", "alice-secret", tenant="lab")


@pytest.fixture(scope="module")
def gateway() -> Iterator[tuple[Gateway, RunningServer]]:
    gw = Gateway(rgw_cluster(12), Users([ALICE]), DATA_POOL, INDEX_POOL, op_timeout=0.5)
    server = start_in_thread(gw)
    yield gw, server
    server.stop()


def client(server: RunningServer, secret: str = ALICE.secret_key, key: str = ALICE.access_key,
           checksums: str = "when_supported") -> BaseClient:
    return boto3.client(
        "s3", endpoint_url=f"http://127.0.0.1:{server.port}", region_name="us-east-1",
        aws_access_key_id=key, aws_secret_access_key=secret,
        config=Config(signature_version="s3v4", s3={"addressing_style": "path"}, retries={"max_attempts": 1},
                      response_checksum_validation=checksums),
    )


@pytest.fixture(scope="module")
def s3(gateway: tuple[Gateway, RunningServer]) -> BaseClient:
    return client(gateway[1])


def code(err: pytest.ExceptionInfo[ClientError]) -> str:
    return str(err.value.response["Error"]["Code"])


def s3_error(call: Callable[..., Any], **params: Any) -> str:
    """The error code of a request that must fail: `s3_error(s3.get_object, Bucket="b", Key="k")`."""
    with pytest.raises(ClientError) as e:
        call(**params)
    return code(e)


def test_buckets(s3: BaseClient) -> None:
    s3.create_bucket(Bucket="b-buckets")
    s3.head_bucket(Bucket="b-buckets")
    listed = s3.list_buckets()
    assert "b-buckets" in [b["Name"] for b in listed["Buckets"]]
    assert listed["Owner"]["ID"] == "lab$alice"
    assert s3.create_bucket(Bucket="b-buckets")["Location"] == "/b-buckets"  # RGW: its owner re-creating it is a no-op
    s3.put_object(Bucket="b-buckets", Key="x", Body=b"1")
    assert s3_error(s3.delete_bucket, Bucket="b-buckets") == "BucketNotEmpty"
    s3.delete_object(Bucket="b-buckets", Key="x")
    s3.delete_bucket(Bucket="b-buckets")
    with pytest.raises(ClientError) as e:
        s3.head_bucket(Bucket="b-buckets")
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404
    assert s3_error(s3.list_objects_v2, Bucket="b-buckets") == "NoSuchBucket"


def test_big_object_head_and_tails_ranges_metadata(gateway: tuple[Gateway, RunningServer], s3: BaseClient) -> None:
    gw, _ = gateway
    s3.create_bucket(Bucket="big")
    data = os.urandom(9 << 20)
    put = s3.put_object(Bucket="big", Key="dir/blob.bin", Body=data, ContentType="application/x-test",
                        Metadata={"owner": "alice", "run": "42"})
    assert put["ETag"] == f'"{hashlib.md5(data).hexdigest()}"'
    assert len(gw.rados_objects("big", "dir/blob.bin", "lab")) == 3  # head 4 MiB + tails 4 MiB and 1 MiB
    got = s3.get_object(Bucket="big", Key="dir/blob.bin")
    assert got["Body"].read() == data
    assert got["Metadata"] == {"owner": "alice", "run": "42"} and got["ContentType"] == "application/x-test"
    lo, hi = (4 << 20) - 10, (8 << 20) + 10  # crosses head → tail 1 → tail 2
    part = s3.get_object(Bucket="big", Key="dir/blob.bin", Range=f"bytes={lo}-{hi}")
    assert part["ResponseMetadata"]["HTTPStatusCode"] == 206
    assert part["ContentRange"] == f"bytes {lo}-{hi}/{len(data)}"
    assert part["Body"].read() == data[lo: hi + 1]
    assert s3.get_object(Bucket="big", Key="dir/blob.bin", Range="bytes=-5")["Body"].read() == data[-5:]
    head = s3.head_object(Bucket="big", Key="dir/blob.bin")
    assert head["ContentLength"] == len(data) and head["Metadata"]["run"] == "42"
    assert s3_error(s3.get_object, Bucket="big", Key="dir/blob.bin", Range=f"bytes={len(data)}-") == "InvalidRange"
    s3.put_object(Bucket="big", Key="dir/blob.bin", Body=b"small now")  # overwrite frees the old RADOS objects
    assert s3.get_object(Bucket="big", Key="dir/blob.bin")["Body"].read() == b"small now"
    assert sum(u.objects for u in gw.cluster.usage() if u.pool.name == DATA_POOL) == 1
    s3.put_object(Bucket="big", Key="empty", Body=b"")
    assert s3.get_object(Bucket="big", Key="empty")["Body"].read() == b""


def test_listing_prefix_delimiter_pagination(s3: BaseClient) -> None:
    s3.create_bucket(Bucket="lst")
    keys = [f"logs/2025/{i:02d}.txt" for i in range(25)] + ["logs/a/x", "logs/b/y", "top", "with space+plus%"]
    for k in keys:
        s3.put_object(Bucket="lst", Key=k, Body=k.encode())
    pages = list(s3.get_paginator("list_objects_v2").paginate(Bucket="lst", Prefix="logs/2025/",
                                                              PaginationConfig={"PageSize": 10}))
    assert [p["KeyCount"] for p in pages] == [10, 10, 5]
    assert [o["Key"] for p in pages for o in p["Contents"]] == sorted(keys[:25])
    r = s3.list_objects_v2(Bucket="lst", Prefix="logs/", Delimiter="/")
    assert [c["Prefix"] for c in r["CommonPrefixes"]] == ["logs/2025/", "logs/a/", "logs/b/"]
    assert "Contents" not in r
    r = s3.list_objects_v2(Bucket="lst", Delimiter="/", MaxKeys=2)
    assert r["IsTruncated"] and [c["Prefix"] for c in r["CommonPrefixes"]] == ["logs/"]
    r2 = s3.list_objects_v2(Bucket="lst", Delimiter="/", MaxKeys=2, ContinuationToken=r["NextContinuationToken"])
    assert [o["Key"] for o in r2["Contents"]] == ["with space+plus%"] and not r2["IsTruncated"]
    assert [o["Key"] for o in r["Contents"]] == ["top"]
    assert s3.get_object(Bucket="lst", Key="with space+plus%")["Body"].read() == b"with space+plus%"
    v1 = s3.list_objects(Bucket="lst", Prefix="logs/a")
    assert [o["Key"] for o in v1["Contents"]] == ["logs/a/x"]


def test_errors(gateway: tuple[Gateway, RunningServer], s3: BaseClient) -> None:
    s3.create_bucket(Bucket="errs")
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket="errs", Key="nope")
    assert code(e) == "NoSuchKey"
    err = e.value.response["Error"]
    assert err["Key"] == "nope" and e.value.response["ResponseMetadata"]["RequestId"].startswith("tx")
    assert s3_error(s3.get_object, Bucket="nobucket", Key="k") == "NoSuchBucket"
    assert s3_error(client(gateway[1], secret="wrong").list_buckets) == "SignatureDoesNotMatch"
    assert s3_error(client(gateway[1], key="AKIANOBODY").list_buckets) == "InvalidAccessKeyId"
    s3.delete_object(Bucket="errs", Key="never-existed")  # S3: 204 even so


def test_unsigned_payload(gateway: tuple[Gateway, RunningServer]) -> None:
    s3 = client(gateway[1])
    s3.meta.events.register("before-sign.s3.PutObject", _unsigned)
    s3.create_bucket(Bucket="unsigned")
    s3.put_object(Bucket="unsigned", Key="k", Body=b"payload")
    assert s3.get_object(Bucket="unsigned", Key="k")["Body"].read() == b"payload"


def _unsigned(request: object, **_: object) -> None:
    request.context["payload_signing_enabled"] = False  # type: ignore[attr-defined]


def test_ceph_semantics_through_s3(gateway: tuple[Gateway, RunningServer], s3: BaseClient) -> None:
    gw, _ = gateway
    cluster = gw.cluster
    s3.create_bucket(Bucket="ecb")
    data = os.urandom(5 << 20)
    s3.put_object(Bucket="ecb", Key="obj", Body=data)
    head = gw.rados_objects("ecb", "obj", "lab")[0]
    pg = cluster.locate(DATA_POOL, head)
    osds = [o for o in pg.acting if o is not None][:3]
    with gw.lock:
        for o in osds[:2]:
            cluster.osd_stopped(o, now=1.0, clean=True)
    assert pg.state(cluster.is_up) & PgState.ACTIVE  # active+undersized+degraded
    assert s3.get_object(Bucket="ecb", Key="obj")["Body"].read() == data
    with gw.lock:
        cluster.osd_stopped(osds[2], now=2.0, clean=True)
    assert not pg.state(cluster.is_up) & PgState.ACTIVE  # peered: data intact, I/O blocks
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket="ecb", Key="obj")
    assert code(e) == "ServiceUnavailable" and e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 503
    with gw.lock:
        for o in osds:
            cluster.osd_started(o, now=3.0)
        cluster.recover()
    assert s3.get_object(Bucket="ecb", Key="obj")["Body"].read() == data
    assert cluster.deep_scrub(pg.pgid) == []
    assert all(s & PgState.CLEAN for s in cluster.pg_states().values())
