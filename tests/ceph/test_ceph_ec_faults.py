"""EC 8+3 durability through the daemons (`twin up mini --ceph`, 12 hosts): S3 objects of 0 B, 1 B,
512 KiB, 4 MiB + 1 and 100 MiB against 1, 2, 3 and 4 lost OSDs of their PG (chosen from the PG's
acting set through the admin API), as FIDELITY §4's state table says:

- 1–2 lost: active+undersized+degraded, every object reads back byte for byte;
- 3 lost: undersized+degraded+peered, GET and PUT wait the op timeout then 503, yet the data is
  intact: every object decodes byte for byte from the 8 chunks left on the other OSDs;
- 4 lost: down, reads fail with an error naming the PG's state and `twin ceph health detail` names
  the unfound objects;
- after each, the OSDs return, the PGs recover to active+clean and every checksum matches.

Then kill -9 of every daemon (monitor, each OSD, gateway) while uploads run: every acknowledged
object reads back, no half-written object is visible.

The twin's clock runs 50×: heartbeat 0.12 s, grace 0.4 s, the gateway's 30 s op timeout 0.6 s,
down→out 12 s (each round stays well under it).
"""

from __future__ import annotations

import hashlib
import os
import random
import threading
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from typer.testing import CliRunner

from clustertwin.v1 import ceph_pb2 as pb
from emulator.cli.main import app
from emulator.health import SERVING, check_all
from services.ceph.erasure import ErasureCode
from services.ceph.sdk import CephAdmin
from tests.ceph.helpers import SCALE, all_clean, ceph_twin, osd_fault, pg_state, wait_for

DATA = "default.rgw.buckets.data"
OP_TIMEOUT_WALL = 30 / SCALE
AK, SK = "ECFAULTKEY0000000001", "ecfaultsecret00000000000000000000000001"
SIZES = {"zero": 0, "one": 1, "half-mib": 512 << 10, "stripe-plus-1": (4 << 20) + 1, "hundred-mib": 100 << 20}
RNG = random.Random(5)


@pytest.fixture(scope="module")
def twin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CephAdmin]:
    with ceph_twin(tmp_path_factory, "ecf") as admin:
        admin.user_create("ec", "EC", access_key=AK, secret_key=SK)
        yield admin


def client(admin: CephAdmin) -> Any:
    return boto3.client("s3", endpoint_url=admin.s3_endpoint(), aws_access_key_id=AK, aws_secret_access_key=SK,
                        region_name="us-east-1",
                        config=Config(retries={"max_attempts": 0}, s3={"addressing_style": "path"},
                                      connect_timeout=5, read_timeout=60))


@pytest.fixture(scope="module")
def objects(twin: CephAdmin) -> dict[str, str]:
    """The five objects, uploaded once: key → sha256."""
    s3 = client(twin)
    s3.create_bucket(Bucket="ecdata")
    out = {}
    for key, size in SIZES.items():
        body = os.urandom(size)
        s3.put_object(Bucket="ecdata", Key=key, Body=body)
        out[key] = hashlib.sha256(body).hexdigest()
    return out


def sha(s3: Any, key: str) -> str:
    return hashlib.sha256(s3.get_object(Bucket="ecdata", Key=key)["Body"].read()).hexdigest()


def pieces(admin: CephAdmin, key: str) -> list[pb.CephObjectStat]:
    """The RADOS objects of S3 object `key`, in order: head, then tails `..._1`, `..._2`, ..."""
    objs = admin.call("ListObjects", pb.CephMonListObjectsRequest(pool=DATA)).objects
    heads = [o for o in objs if o.name.endswith("_" + key) and "__:" in o.name ]
    assert len(heads) == 1, [o.name for o in heads]
    head = heads[0]
    marker, rest = head.name.split("__:", 1)
    tag = rest[: -len(key) - 1]
    prefix = f"{marker}__shadow_.{tag}_"
    tails = sorted((o for o in objs if o.name.startswith(prefix)), key=lambda o: int(o.name[len(prefix):]))
    return [head, *tails]


def decode_from_osds(admin: CephAdmin, key: str, lost: set[int]) -> bytes:
    """Rebuild `key` from the chunks on OSDs not in `lost`, straight from the OSD daemons (no monitor)."""
    ec = ErasureCode(8, 3)
    out = bytearray()
    for o in pieces(admin, key):
        pg = admin.call("Pgs", pb.CephMonPgsRequest(pg=o.pg)).pgs[0]
        chunks = {}
        for pos, osd in enumerate(pg.up if len(pg.up) == 11 else pg.acting):
            if osd in lost or osd == 2147483647:
                continue
            key = pb.CephChunkKey(pg=o.pg, object=o.name, shard=pos)
            r = admin.osd(osd, "GetChunk", pb.CephOsdGetChunkRequest(key=key))
            if r.found:
                chunks[pos] = r.data
            if len(chunks) == 8:
                break
        assert len(chunks) == 8, f"{o.name}: only {len(chunks)} chunks left"
        out += ec.decode(chunks, o.size)
    return bytes(out)


def head_pg(admin: CephAdmin, key: str) -> pb.CephPg:
    return admin.call("Pgs", pb.CephMonPgsRequest(pool=DATA, object=pieces(admin, key)[0].name)).pgs[0]


def stop(admin: CephAdmin, osds: list[int]) -> None:
    for o in osds:
        assert osd_fault(admin, o, stopped=True).state == "stopped"


def start_and_recover(admin: CephAdmin, osds: list[int]) -> None:
    for o in osds:
        osd_fault(admin, o, stopped=False)
    wait_for("active+clean", lambda: all_clean(admin), timeout=30)


def check_all_objects(s3: Any, objects: dict[str, str]) -> None:
    for key, digest in objects.items():
        assert sha(s3, key) == digest, key


@pytest.mark.parametrize("lost", [1, 2])
def test_one_or_two_lost_osds_degraded_reads_byte_exact(twin: CephAdmin, objects: dict[str, str], lost: int) -> None:
    s3 = client(twin)
    for key in ("hundred-mib", "one"):   # the big object's PG, then another one
        pg = head_pg(twin, key)
        victims = RNG.sample(list(pg.acting), lost)
        stop(twin, victims)
        try:
            wait_for(f"{lost} lost → active+undersized+degraded",
                     lambda pg=pg: pg_state(twin, pg.pgid) == "active+undersized+degraded", timeout=10)
            check_all_objects(s3, objects)
        finally:
            start_and_recover(twin, victims)
    check_all_objects(s3, objects)


def test_three_lost_blocks_io_but_data_is_intact(twin: CephAdmin, objects: dict[str, str]) -> None:
    s3 = client(twin)
    pg = head_pg(twin, "stripe-plus-1")
    victims = RNG.sample(list(pg.acting[:8]), 3)   # three data shards: the worst case for decoding
    stop(twin, victims)
    try:
        wait_for("3 lost → peered", lambda: pg_state(twin, pg.pgid) == "undersized+degraded+peered", timeout=10)
        t0 = time.monotonic()
        with pytest.raises(ClientError) as e:
            s3.get_object(Bucket="ecdata", Key="stripe-plus-1")
        assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 503
        assert e.value.response["Error"]["Code"] == "ServiceUnavailable"
        assert time.monotonic() - t0 >= OP_TIMEOUT_WALL * 0.9   # it waited for the PG first
        # A write to that PG (a RADOS object that maps there) is refused as unavailable too.
        other = next(f"same-pg-{i}" for i in range(10_000)
                     if twin.call("Pgs", pb.CephMonPgsRequest(pool=DATA, object=f"same-pg-{i}")).pgs[0].pgid == pg.pgid)
        with pytest.raises(Exception) as rados:
            twin.call("PutObject", pb.CephMonPutObjectRequest(pool=DATA, name=other, data=b"x"))
        assert "UNAVAILABLE" in str(rados.value) and "peered" in str(rados.value)
        lost = set(victims)
        for key, digest in objects.items():
            assert hashlib.sha256(decode_from_osds(twin, key, lost)).hexdigest() == digest, key
        detail = CliRunner().invoke(app, ["ceph", "health", "detail", "--run-dir", str(twin.run.path)]).output
        assert "Reduced data availability" in detail and f"pg {pg.pgid} is undersized+degraded+peered" in detail
    finally:
        start_and_recover(twin, victims)
    check_all_objects(s3, objects)


def test_four_lost_reads_fail_clearly_and_health_names_unfound(twin: CephAdmin, objects: dict[str, str]) -> None:
    s3 = client(twin)
    head = pieces(twin, "half-mib")[0].name
    pg = head_pg(twin, "half-mib")
    victims = RNG.sample(list(pg.acting), 4)
    stop(twin, victims)
    try:
        wait_for("4 lost → down", lambda: pg_state(twin, pg.pgid).startswith("down"), timeout=10)
        with pytest.raises(ClientError) as e:
            s3.get_object(Bucket="ecdata", Key="half-mib")
        assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 503
        with pytest.raises(Exception) as rados:
            twin.call("GetObject", pb.CephMonGetObjectRequest(pool=DATA, name=head))
        assert f"pg {pg.pgid} is down" in str(rados.value) and "7 of 11 shards available" in str(rados.value), \
            str(rados.value)
        detail = CliRunner().invoke(app, ["ceph", "health", "detail", "--run-dir", str(twin.run.path)]).output
        assert "OBJECT_UNFOUND" in detail or "unfound" in detail, detail
        assert f"pg {pg.pgid} has" in detail and head in detail, detail
        assert pg.pgid in twin.call("Pgs", pb.CephMonPgsRequest(pg=pg.pgid)).pgs[0].pgid
        assert head in twin.call("Pgs", pb.CephMonPgsRequest(pg=pg.pgid)).pgs[0].unfound
    finally:
        start_and_recover(twin, victims)
    check_all_objects(s3, objects)
    assert twin.call("Scrub", pb.CephMonScrubRequest()).errors == []


def test_kill9_every_daemon_mid_upload(twin: CephAdmin, objects: dict[str, str]) -> None:
    s3 = client(twin)
    acked: dict[str, str] = {}
    tried: dict[str, str] = {}
    done = threading.Event()

    def uploader() -> None:
        i = 0
        c = client(twin)
        while not done.is_set():
            i += 1
            key = f"storm-{i}"
            body = os.urandom(RNG.choice([4096, 300_000, (4 << 20) + 7, 9 << 20]))
            tried[key] = hashlib.sha256(body).hexdigest()
            try:
                c.put_object(Bucket="ecdata", Key=key, Body=body)
            except Exception:  # noqa: BLE001 - 503s and dropped connections while daemons die
                time.sleep(0.05)
                continue
            acked[key] = tried[key]

    daemons = twin.run.read(twin.run.daemons)["daemons"]
    names = ["ceph-mon", *sorted((n for n in daemons if n.startswith("osd.")), key=lambda n: int(n[4:])), "ceph-rgw"]
    mon = twin.mon_address
    t = threading.Thread(target=uploader, daemon=True)
    t.start()
    try:
        wait_for("uploads under way", lambda: len(acked) >= 2, timeout=20)
        for name in names:
            twin.kill(name)
            time.sleep(0.3)
            if name == "ceph-mon":   # let the monitor come back before the OSDs go
                time.sleep(0.5)
                wait_for("the monitor serving", lambda: check_all([mon])[mon] == SERVING, timeout=20)
        rgw = twin.daemons["ceph-rgw"].grpc
        time.sleep(0.5)
        wait_for("the gateway serving", lambda: check_all([rgw])[rgw] == SERVING, timeout=20)
        n_before = len(acked)
        wait_for("uploads acknowledged again", lambda: len(acked) > n_before, timeout=30)
    finally:
        done.set()
        t.join(60)
    wait_for("active+clean", lambda: all_clean(twin), timeout=30)
    assert len(acked) >= 3
    for key, digest in acked.items():
        assert sha(s3, key) == digest, key
    listed = [o["Key"] for o in s3.list_objects_v2(Bucket="ecdata", MaxKeys=1000).get("Contents", [])]
    for key in listed:
        if key.startswith("storm-"):
            assert sha(s3, key) == tried[key], f"{key} is visible but not whole"
    check_all_objects(s3, objects)
