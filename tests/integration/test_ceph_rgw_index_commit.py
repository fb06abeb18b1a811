"""An object's index write that fails has an unknown outcome; the gateway reads the entry back and
neither frees data that a listed entry points to nor keeps freed data listed. Concurrent PUTs of
one key leave the index pool and the gateway's index on the same version. A GET whose later stripe
cannot be read is cut short. Real boto3 against the gateway over an in-process cluster whose RADOS
calls are made to fail in each way."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterator

import boto3
import pytest
from botocore.client import BaseClient
from botocore.config import Config
from botocore.exceptions import ClientError

from services.ceph.cluster import Cluster
from services.ceph.errors import CephError
from services.ceph.rgw.cluster_setup import DATA_POOL, INDEX_POOL, rgw_cluster
from services.ceph.rgw.gateway import Gateway
from services.ceph.rgw.http import RunningServer, start_in_thread
from services.ceph.rgw.users import User, Users

BOB = User("bob", "Bob", "AKIABOB000000000", "bob-secret")


class FlakyIndex:
    """The cluster, with index-pool writes that fail once as told: `after` stores the entry and then
    fails (the monitor lost an OSD mid-write), `before` fails without storing; `reads_fail` makes the
    read-back fail too."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster, self.mode, self.reads_fail = cluster, "", False

    def put(self, pool: str, name: str, data: bytes) -> object:
        mode, self.mode = (self.mode, "") if pool == INDEX_POOL and name.startswith(".dir.") else ("", self.mode)
        if mode == "before":
            raise CephError("INTERNAL", "index write failed")
        out = self.cluster.put(pool, name, data)
        if mode == "after":
            raise CephError("INTERNAL", "OSD lost after the write")
        return out

    def get(self, pool: str, name: str) -> bytes:
        if self.reads_fail and pool == INDEX_POOL:
            raise CephError("INTERNAL", "read failed")
        return self.cluster.get(pool, name)

    def __getattr__(self, attr: str) -> object:
        return getattr(self.cluster, attr)


@pytest.fixture()
def rig() -> Iterator[tuple[FlakyIndex, Gateway, BaseClient]]:
    flaky = FlakyIndex(rgw_cluster(12))
    gw = Gateway(flaky, Users([BOB]), DATA_POOL, INDEX_POOL, op_timeout=0.5)  # type: ignore[arg-type]
    server: RunningServer = start_in_thread(gw)
    s3 = boto3.client("s3", endpoint_url=f"http://127.0.0.1:{server.port}", region_name="us-east-1",
                      aws_access_key_id=BOB.access_key, aws_secret_access_key=BOB.secret_key,
                      config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 0}))
    s3.create_bucket(Bucket="idx")
    yield flaky, gw, s3
    server.stop()


def data_objects(flaky: FlakyIndex) -> int:
    return sum(len(pg.objects) for pg in flaky.cluster.pgs.values() if pg.pool.name == DATA_POOL)


def index_entry(flaky: FlakyIndex, gw: Gateway, key: str) -> bytes | None:
    b = gw.buckets[("", "idx")]
    try:
        return flaky.cluster.get(INDEX_POOL, f".dir.{b.marker}.{key}")
    except CephError:
        return None


def test_entry_stored_before_the_failure_completes_the_put(rig: tuple[FlakyIndex, Gateway, BaseClient]) -> None:
    flaky, gw, s3 = rig
    body = os.urandom((4 << 20) + 9)
    flaky.mode = "after"
    s3.put_object(Bucket="idx", Key="landed", Body=body)  # the entry is there: the PUT is complete
    assert s3.get_object(Bucket="idx", Key="landed")["Body"].read() == body
    assert index_entry(flaky, gw, "landed") is not None


def test_entry_not_stored_fails_and_frees_the_data(rig: tuple[FlakyIndex, Gateway, BaseClient]) -> None:
    flaky, gw, s3 = rig
    before = data_objects(flaky)
    flaky.mode = "before"
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket="idx", Key="lost", Body=os.urandom(5 << 20))
    assert e.value.response["Error"]["Code"] == "InternalError"
    assert index_entry(flaky, gw, "lost") is None
    assert data_objects(flaky) == before  # nothing of the failed PUT is left
    assert "lost" not in [o["Key"] for o in s3.list_objects_v2(Bucket="idx").get("Contents", [])]


def test_unknown_outcome_keeps_the_data(rig: tuple[FlakyIndex, Gateway, BaseClient]) -> None:
    flaky, gw, s3 = rig
    before = data_objects(flaky)
    flaky.mode, flaky.reads_fail = "after", True
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket="idx", Key="unknown", Body=os.urandom(5 << 20))
    flaky.reads_fail = False
    assert e.value.response["Error"]["Code"] == "InternalError"
    entry = index_entry(flaky, gw, "unknown")
    assert entry is not None  # what a restarted gateway would list ...
    assert data_objects(flaky) == before + 2  # ... still has its head and tail


def test_concurrent_puts_of_one_key_agree(rig: tuple[FlakyIndex, Gateway, BaseClient]) -> None:
    flaky, gw, s3 = rig
    before = data_objects(flaky)
    bodies = [os.urandom(300_000) for _ in range(6)]
    errors: list[BaseException] = []

    def put(body: bytes, c: Callable[[], BaseClient] = lambda: s3) -> None:
        try:
            c().put_object(Bucket="idx", Key="same", Body=body)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=put, args=(b,)) for b in bodies]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    stored = json.loads(index_entry(flaky, gw, "same") or b"{}")
    current = gw.buckets[("", "idx")].objects["same"]
    assert stored["pieces"] == [list(p) for p in current.pieces]  # the pool's entry is the one served
    assert s3.get_object(Bucket="idx", Key="same")["Body"].read() in bodies
    assert data_objects(flaky) == before + 1  # one version's head (300 kB has no tail); the others freed


def test_a_stripe_failing_mid_get_cuts_the_response_short(rig: tuple[FlakyIndex, Gateway, BaseClient]) -> None:
    """A GET streams: the status is sent after the first stripe; a later stripe that cannot be read
    ends the connection before Content-Length, which boto3 reports, and the gateway serves on."""
    flaky, gw, s3 = rig
    body = os.urandom(9 << 20)  # head + 2 tails
    s3.put_object(Bucket="idx", Key="striped", Body=body)
    s3.put_object(Bucket="idx", Key="other", Body=b"fine")
    last_tail = gw.rados_objects("idx", "striped")[-1]
    real_get = flaky.cluster.get

    def get(pool: str, name: str) -> bytes:
        if name == last_tail:
            raise CephError("DATA_LOSS", "stripe unreadable")
        return real_get(pool, name)

    flaky.get = get  # type: ignore[method-assign]
    try:
        resp = s3.get_object(Bucket="idx", Key="striped")
        assert resp["ContentLength"] == len(body)  # the status line went out with the full length
        with pytest.raises(Exception) as e:
            resp["Body"].read()
        assert type(e.value).__name__ == "ResponseStreamingError" and "IncompleteRead" in str(e.value), repr(e.value)
    finally:
        del flaky.get
    assert s3.get_object(Bucket="idx", Key="other")["Body"].read() == b"fine"
    assert s3.get_object(Bucket="idx", Key="striped")["Body"].read() == body
