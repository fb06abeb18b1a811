"""Ceph as real daemons in a twin (`twin up mini --ceph`): a monitor, 15 OSD daemons (12 hosts, one
HDD each, 3 with an SSD), the RGW gateway; boto3 through the gateway; PG states as OSDs stop and
return; scrub and repair; down→out and backfill; kill -9 of the gateway mid-upload.

The twin's clock runs 50× (`--clock-scale 50`): Ceph's 6 s heartbeat, 20 s grace and 600 s
down→out take 0.12 s, 0.4 s and 12 s of wall time; the gateway's 30 s op timeout 0.6 s; a lifecycle
day (`--rgw-lc-debug-interval 50`) 1 s.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import grpc
import pytest
from botocore import UNSIGNED
from botocore.config import Config
from botocore.exceptions import ClientError
from typer.testing import CliRunner

from clustertwin.v1 import ceph_pb2 as pb
from clustertwin.v1 import ceph_pb2_grpc as pb_grpc
from emulator.cli.main import app
from emulator.health import SERVING, check_all
from services.ceph.errors import CephError
from services.ceph.sdk import CephAdmin
from tests.ceph import helpers
from tests.ceph.helpers import SCALE, all_clean, osd_fault, pg_state, wait_for

DATA = "default.rgw.buckets.data"
LC_DAY = 50.0  # twin seconds per lifecycle day: 1 s of wall time
AK, SK = "CEPHTESTKEY0000000001", "cephtestsecret000000000000000000000000001"


@pytest.fixture(scope="module")
def ceph_twin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CephAdmin]:
    with helpers.ceph_twin(tmp_path_factory, "ceph", clean=False, rgw_lc_debug_interval=LC_DAY) as admin:
        yield admin


def cli(admin: CephAdmin, *args: str) -> Any:
    return CliRunner().invoke(app, ["ceph", *args, "--run-dir", str(admin.run.path)])


@pytest.fixture(scope="module")
def s3(ceph_twin: CephAdmin) -> Any:
    r = cli(ceph_twin, "user", "create", "--uid", "tester", "--display-name", "Test User", "--access-key", AK,
            "--secret", SK)
    assert r.exit_code == 0, r.output
    assert '"access_key": "' + AK in r.output
    return boto3.client("s3", endpoint_url=ceph_twin.s3_endpoint(), aws_access_key_id=AK, aws_secret_access_key=SK,
                        region_name="us-east-1",
                        config=Config(retries={"max_attempts": 0}, s3={"addressing_style": "path"},
                                      connect_timeout=5, read_timeout=60))


def rados_name(admin: CephAdmin, key: str) -> str:
    """The data-pool RADOS object holding the head of S3 object `key`."""
    objs = admin.call("ListObjects", pb.CephMonListObjectsRequest(pool=DATA)).objects
    names = [o.name for o in objs if o.name.endswith("_" + key) and "__:" in o.name]
    assert len(names) == 1, names
    return names[0]


def pg_of(admin: CephAdmin, name: str) -> pb.CephPg:
    return admin.call("Pgs", pb.CephMonPgsRequest(pool=DATA, object=name)).pgs[0]


def test_startup_and_status_shape(ceph_twin: CephAdmin) -> None:
    kinds = [d.kind for d in ceph_twin.manifest.daemons]
    assert kinds.count("ceph_osd") == 15 and kinds.count("ceph_mon") == 1 and kinds.count("ceph_rgw") == 1
    # The 20 s heartbeat grace is 0.4 s of wall time at 50×: an OSD process stalled that long while 17
    # start on 2 cores is marked down until its next heartbeat boots it, so wait for a clean snapshot.
    r = wait_for("HEALTH_OK", lambda: (out := cli(ceph_twin, "status")).exit_code == 0
                 and "    health: HEALTH_OK" in out.output.splitlines() and out)
    lines = r.output.splitlines()
    assert lines[0] == "  cluster:" and lines[1].startswith("    id:     ")
    assert lines[2] == "    health: HEALTH_OK", r.output
    assert "    osd: 15 osds: 15 up" in r.output and ", 15 in (since" in r.output
    assert "    pools:   3 pools, 48 pgs" in r.output
    assert "    pgs:     48 active+clean" in r.output
    tree = cli(ceph_twin, "osd", "tree").output
    assert "host ceph12" in tree and "osd.14" in tree


def test_bad_input_is_refused_and_changes_nothing(ceph_twin: CephAdmin) -> None:
    before = ceph_twin.call("Status", pb.CephMonStatusRequest()).epoch
    r = cli(ceph_twin, "osd", "out", "99")
    assert r.exit_code == 2 and "osd.99 does not exist" in r.output
    r = cli(ceph_twin, "user", "create", "--uid", "x")
    assert r.exit_code == 2 and "--display-name" in r.output
    r = cli(ceph_twin, "osd", "slow", "0", "0.5")
    assert r.exit_code == 2 and "FACTOR must be >= 1" in r.output
    r = cli(ceph_twin, "pg", "repair", "nonsense")
    assert r.exit_code == 2 and "is not a PG id" in r.output
    assert ceph_twin.call("Status", pb.CephMonStatusRequest()).epoch == before


def test_ceph_errors_reach_clients_as_their_grpc_status(ceph_twin: CephAdmin) -> None:
    """Each CephError a daemon raises ends the call with its own status, read back by CephError.from_rpc."""
    osd0 = pb_grpc.CephOsdStub(grpc.insecure_channel(ceph_twin.daemons["osd.0"].grpc))
    rbd = pb_grpc.CephRbdStub(grpc.insecure_channel(ceph_twin.mon_address))
    calls = {
        "NOT_FOUND": lambda: ceph_twin.mon.OsdCommand(pb.CephMonOsdCommandRequest(osd=99, command="out")),
        "INVALID_ARGUMENT": lambda: ceph_twin.mon.OsdCommand(pb.CephMonOsdCommandRequest(osd=0, command="explode")),
        "ALREADY_EXISTS": lambda: [ceph_twin.mon.UserCreate(pb.CephMonUserCreateRequest(user=pb.CephRgwUser(
            uid="twice", display_name="Twice", access_key="AKTWICE", secret_key="sk"))) for _ in range(2)],
        "FAILED_PRECONDITION": lambda: ceph_twin.mon.ClearFault(pb.CephMonClearFaultRequest(id=cleared.id)),
    }
    cleared = ceph_twin.inject_fault(0, "down")   # over by itself: logged cleared, so it cannot be cleared
    osd_calls = {
        "NOT_FOUND": lambda: osd0.Corrupt(pb.CephOsdCorruptRequest(
            key=pb.CephChunkKey(pg="1.0", object="none", shard=0))),
        "INVALID_ARGUMENT": lambda: osd0.PutChunk(pb.CephOsdPutChunkRequest(
            key=pb.CephChunkKey(pg="../x", object="o"), data=b"x")),
    }
    for code, call in [*calls.items(), *osd_calls.items(),
                       ("INVALID_ARGUMENT", lambda: rbd.Read(pb.CephRbdReadRequest(name="x", length=64 << 20)))]:
        with pytest.raises(grpc.RpcError) as e:
            call()
        assert e.value.code() == grpc.StatusCode[code], (code, e.value.details())
        assert CephError.from_rpc(e.value).code == code


def test_boto3_put_get_byte_exact(ceph_twin: CephAdmin, s3: Any) -> None:
    s3.create_bucket(Bucket="data")
    for size in (0, 1, 512 << 10, (4 << 20) + 1):
        body = os.urandom(size)
        s3.put_object(Bucket="data", Key=f"obj-{size}", Body=body)
        assert s3.get_object(Bucket="data", Key=f"obj-{size}")["Body"].read() == body
    st = ceph_twin.call("Status", pb.CephMonStatusRequest())
    assert st.objects > 0 and st.raw_bytes > st.stored_bytes


def test_two_down_degraded_three_down_blocks_then_recovers(ceph_twin: CephAdmin, s3: Any) -> None:
    body = os.urandom(1 << 20)
    s3.put_object(Bucket="data", Key="pg-drill", Body=body)
    pg = pg_of(ceph_twin, rados_name(ceph_twin, "pg-drill"))
    assert pg.state == "active+clean"
    victims = list(pg.acting[:3])
    other = ""
    try:
        for osd in victims[:2]:
            assert osd_fault(ceph_twin, osd, stopped=True).state == "stopped"
        wait_for("2 down → active+undersized+degraded",
                 lambda: pg_state(ceph_twin, pg.pgid) == "active+undersized+degraded", timeout=10)
        assert s3.get_object(Bucket="data", Key="pg-drill")["Body"].read() == body
        # Writes continue in the degraded PG (an S3 overwrite would go to a new RADOS object, elsewhere).
        other = next(f"same-pg-{i}" for i in range(10_000) if pg_of(ceph_twin, f"same-pg-{i}").pgid == pg.pgid)
        ceph_twin.call("PutObject", pb.CephMonPutObjectRequest(pool=DATA, name=other, data=body[::-1]))
        assert ceph_twin.call("GetObject", pb.CephMonGetObjectRequest(pool=DATA, name=other)).data == body[::-1]
        status = cli(ceph_twin, "status").output
        assert "health: HEALTH_WARN" in status and "2 osds down" in status
        assert "active+undersized+degraded" in status
        detail = cli(ceph_twin, "health", "detail").output
        assert f"pg {pg.pgid} is active+undersized+degraded" in detail

        osd_fault(ceph_twin, victims[2], stopped=True)
        wait_for("3 down → peered", lambda: "peered" in pg_state(ceph_twin, pg.pgid), timeout=10)
        assert pg_state(ceph_twin, pg.pgid) == "undersized+degraded+peered"
        t0 = time.monotonic()
        with pytest.raises(ClientError) as e:
            s3.get_object(Bucket="data", Key="pg-drill")
        assert e.value.response["Error"]["Code"] == "ServiceUnavailable"
        assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 503
        assert time.monotonic() - t0 >= 30 / SCALE * 0.9   # it waited the op timeout first
        assert "Reduced data availability" in cli(ceph_twin, "health", "detail").output
    finally:
        for osd in victims:
            osd_fault(ceph_twin, osd, stopped=False)
    wait_for("recovery to active+clean", lambda: all_clean(ceph_twin), timeout=30)
    assert s3.get_object(Bucket="data", Key="pg-drill")["Body"].read() == body
    assert ceph_twin.call("GetObject", pb.CephMonGetObjectRequest(pool=DATA, name=other)).data == body[::-1]
    assert ceph_twin.call("Scrub", pb.CephMonScrubRequest(pg=pg.pgid)).errors == []   # the stale shards were rebuilt


def test_corrupt_chunk_scrub_finds_repair_fixes(ceph_twin: CephAdmin, s3: Any) -> None:
    body = os.urandom(300_000)
    s3.put_object(Bucket="data", Key="rot", Body=body)
    name = rados_name(ceph_twin, "rot")
    r = cli(ceph_twin, "osd", "corrupt", "--object", name, "--offset", "7")
    assert r.exit_code == 0 and "corrupted shard 0" in r.output, r.output
    pg = pg_of(ceph_twin, name)
    scrub = cli(ceph_twin, "pg", "deep-scrub", pg.pgid).output
    assert f"{name} shard 0 on osd.{pg.acting[0]}: crc mismatch" in scrub and "1 error(s) found" in scrub
    assert "inconsistent" in pg_state(ceph_twin, pg.pgid)
    st = cli(ceph_twin, "status").output
    assert "HEALTH_ERR" in st and "1 scrub errors" in st
    assert s3.get_object(Bucket="data", Key="rot")["Body"].read() == body   # read skips the bad shard
    rep = cli(ceph_twin, "pg", "repair", pg.pgid).output
    assert "1 fixed" in rep, rep
    assert ceph_twin.call("Scrub", pb.CephMonScrubRequest(pg=pg.pgid)).errors == []
    assert pg_state(ceph_twin, pg.pgid) == "active+clean"
    assert s3.get_object(Bucket="data", Key="rot")["Body"].read() == body


def test_kill9_osd_is_restarted_and_data_stays(ceph_twin: CephAdmin, s3: Any) -> None:
    body = os.urandom(100_000)
    s3.put_object(Bucket="data", Key="killed", Body=body)
    osd = pg_of(ceph_twin, rados_name(ceph_twin, "killed")).acting[1]
    name = f"osd.{osd}"
    old = ceph_twin.pid(name)
    r = cli(ceph_twin, "osd", "kill", str(osd))
    assert r.exit_code == 0 and "SIGKILL" in r.output
    wait_for("the OSD restarted", lambda: ceph_twin.run.read(ceph_twin.run.daemons)["daemons"][name]["pid"]
             not in (0, old), timeout=10)
    wait_for("the OSD serving", lambda: check_all([ceph_twin.daemons[name].grpc])[
        ceph_twin.daemons[name].grpc] == SERVING)
    wait_for("active+clean", lambda: all_clean(ceph_twin), timeout=20)
    assert s3.get_object(Bucket="data", Key="killed")["Body"].read() == body
    assert ceph_twin.call("Scrub", pb.CephMonScrubRequest()).errors == []


def test_down_then_out_backfills_to_the_spare_host(ceph_twin: CephAdmin, s3: Any) -> None:
    body = os.urandom(200_000)
    s3.put_object(Bucket="data", Key="backfill", Body=body)
    name = rados_name(ceph_twin, "backfill")
    pg = pg_of(ceph_twin, name)
    osd = pg.acting[4]
    osd_fault(ceph_twin, osd, stopped=True)
    try:
        # Down at once (clean stop), out after mon_osd_down_out_interval (600 twin s = 12 s here).
        def now() -> pb.CephOsdInfo:
            return next(o for o in ceph_twin.call("OsdTree", pb.CephMonOsdTreeRequest()).osds if o.id == osd)
        before = now()
        wait_for("down", lambda: not now().up, timeout=5)
        assert getattr(before, "in")
        wait_for("automatically out", lambda: not getattr(now(), "in"), timeout=600 / SCALE + 5)
        wait_for("backfilled onto the spare host → active+clean",
                 lambda: pg_state(ceph_twin, pg.pgid) == "active+clean", timeout=20)
        now = pg_of(ceph_twin, name)
        assert osd not in now.acting and len(set(now.acting)) == 11
        assert s3.get_object(Bucket="data", Key="backfill")["Body"].read() == body
    finally:
        osd_fault(ceph_twin, osd, stopped=False)
    # Back up, and in again (it was marked out automatically): its data moves back.
    wait_for("active+clean after the OSD returned", lambda: all_clean(ceph_twin), timeout=30)
    assert s3.get_object(Bucket="data", Key="backfill")["Body"].read() == body


def test_kill9_monitor_loses_nothing(ceph_twin: CephAdmin, s3: Any) -> None:
    body = os.urandom(1 << 20)
    s3.put_object(Bucket="data", Key="before-mon-crash", Body=body)
    restart_monitor(ceph_twin)
    assert s3.get_object(Bucket="data", Key="before-mon-crash")["Body"].read() == body
    wait_for("active+clean", lambda: all_clean(ceph_twin), timeout=20)
    assert ceph_twin.call("Scrub", pb.CephMonScrubRequest()).errors == []


def test_kill9_monitor_restarts_with_its_maps_faults_and_users_from_tables(ceph_twin: CephAdmin, s3: Any) -> None:
    """The monitor's store is real tables (no key-value table): an operator's out, the epoch, a fault
    and the users survive a kill -9, read back from the same rows a person can query."""
    wait_for("active+clean", lambda: all_clean(ceph_twin), timeout=30)
    ceph_twin.osd_command(2, "out")
    f = ceph_twin.inject_fault(5, "slow", factor=2.0)
    epoch = ceph_twin.status().epoch
    restart_monitor(ceph_twin)
    assert ceph_twin.status().epoch >= epoch
    assert not getattr({o.id: o for o in ceph_twin.osd_tree().osds}[2], "in")
    assert [(x.id, x.kind, x.active) for x in ceph_twin.list_faults()] == [(f.id, "slow", True)]
    assert "tester" in [u.uid for u in ceph_twin.users()]
    db = sqlite3.connect(ceph_twin.run.path / "state" / "ceph-mon.db")
    try:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert {"ceph_mon_osdmap", "ceph_mon_osds", "ceph_mon_pgs", "ceph_mon_objects", "ceph_mon_users",
                "ceph_mon_faults"} <= tables and "ceph_mon_kv" not in tables
        assert db.execute('SELECT "in" FROM ceph_mon_osds WHERE id = 2').fetchone() == (0,)
        assert db.execute("SELECT id, kind FROM ceph_mon_faults WHERE active").fetchall() == [(f.id, "slow")]
    finally:
        db.close()
    ceph_twin.clear_fault(f.id)
    ceph_twin.osd_command(2, "in")
    wait_for("active+clean", lambda: all_clean(ceph_twin), timeout=60)


def restart_monitor(admin: CephAdmin) -> None:
    """kill -9 the monitor and wait for the supervisor's restart to serve again."""
    old = admin.kill("ceph-mon")
    wait_for("the monitor restarted", lambda: admin.run.read(admin.run.daemons)["daemons"]["ceph-mon"][
        "pid"] not in (0, old), timeout=10)
    wait_for("the monitor serving", lambda: check_all([admin.mon_address])[admin.mon_address] == SERVING, timeout=20)


def kill9_gateway(admin: CephAdmin, then: Callable[[], None] = lambda: None) -> None:
    """kill -9 the gateway, run `then`, and wait for the supervisor's restart to serve again."""
    old = admin.pid("ceph-rgw")
    admin.kill("ceph-rgw")
    then()
    wait_for("the gateway restarted", lambda: admin.run.read(admin.run.daemons)["daemons"]["ceph-rgw"][
        "pid"] not in (0, old), timeout=10)
    grpc_addr = admin.daemons["ceph-rgw"].grpc
    wait_for("the gateway serving", lambda: check_all([grpc_addr])[grpc_addr] == SERVING, timeout=20)


def test_kill9_gateway_mid_upload_leaves_no_half_object(ceph_twin: CephAdmin, s3: Any) -> None:
    kept = os.urandom(64 << 10)
    s3.put_object(Bucket="data", Key="acknowledged", Body=kept)
    big = os.urandom(48 << 20)
    errors: list[Exception] = []

    def upload() -> None:
        try:
            s3.put_object(Bucket="data", Key="half", Body=big)
        except Exception as e:  # noqa: BLE001 - the connection dies with the gateway
            errors.append(e)

    before = len(ceph_twin.call("ListObjects", pb.CephMonListObjectsRequest(pool=DATA)).objects)
    t = threading.Thread(target=upload)
    t.start()
    # Kill it once the upload is under way: its first tail objects are in the data pool.
    wait_for("the upload writing tails",
             lambda: len(ceph_twin.call("ListObjects", pb.CephMonListObjectsRequest(pool=DATA)).objects) > before + 1,
             timeout=30, every=0.01)
    kill9_gateway(ceph_twin, then=lambda: t.join(30))
    assert errors, "the upload should have failed with the gateway killed"
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket="data").get("Contents", [])]
    assert "half" not in keys
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket="data", Key="half")
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404
    got = s3.get_object(Bucket="data", Key="acknowledged")["Body"].read()   # restored from the index pool
    assert hashlib.sha256(got).digest() == hashlib.sha256(kept).digest()
    assert "obj-1" in keys and "rot" in keys


def test_kill9_gateway_keeps_bucket_settings_and_uploads_in_progress(ceph_twin: CephAdmin, s3: Any) -> None:
    """What RGW keeps in RADOS outlives the gateway: versioning, ACLs, policies, tags, parts acknowledged."""
    s3.create_bucket(Bucket="keep", ACL="public-read")
    s3.create_bucket(Bucket="keep.acl")  # its record's name once was bucket keep's ACL's
    s3.put_bucket_versioning(Bucket="keep", VersioningConfiguration={"Status": "Enabled"})
    v1 = s3.put_object(Bucket="keep", Key="k", Body=b"one", Tagging="stage=raw")["VersionId"]
    s3.put_bucket_tagging(Bucket="keep", Tagging={"TagSet": [{"Key": "tier", "Value": "lake"}]})
    lc = [{"ID": "far", "Filter": {"Prefix": "never/"}, "Status": "Enabled", "Expiration": {"Days": 9999}}]
    s3.put_bucket_lifecycle_configuration(Bucket="keep", LifecycleConfiguration={"Rules": lc})
    s3.put_object(Bucket="keep", Key="k", Body=b"two")
    no_delete = {"Version": "2012-10-17", "Statement": [
        {"Effect": "Deny", "Principal": "*", "Action": "s3:DeleteObject", "Resource": "arn:aws:s3:::keep/*"}]}
    s3.put_bucket_policy(Bucket="keep", Policy=json.dumps(no_delete))
    up = s3.create_multipart_upload(Bucket="keep", Key="mp", ChecksumAlgorithm="CRC32")["UploadId"]
    p1, p2 = os.urandom(5 << 20), os.urandom(1000)
    e1 = s3.upload_part(Bucket="keep", Key="mp", UploadId=up, PartNumber=1, Body=p1, ChecksumAlgorithm="CRC32")

    kill9_gateway(ceph_twin)

    anon = boto3.client("s3", endpoint_url=ceph_twin.s3_endpoint(), region_name="us-east-1",
                        config=Config(signature_version=UNSIGNED, retries={"max_attempts": 0}))
    assert [o["Key"] for o in anon.list_objects_v2(Bucket="keep")["Contents"]] == ["k"]  # still public-read
    with pytest.raises(ClientError) as e:
        anon.list_objects_v2(Bucket="keep.acl")  # the other bucket did not take keep's ACL
    assert e.value.response["Error"]["Code"] == "AccessDenied"
    assert s3.get_bucket_versioning(Bucket="keep")["Status"] == "Enabled"
    assert s3.get_object(Bucket="keep", Key="k", VersionId=v1)["Body"].read() == b"one"
    assert s3.get_object_tagging(Bucket="keep", Key="k", VersionId=v1)["TagSet"] == [{"Key": "stage", "Value": "raw"}]
    assert s3.get_bucket_tagging(Bucket="keep")["TagSet"] == [{"Key": "tier", "Value": "lake"}]
    assert s3.get_bucket_lifecycle_configuration(Bucket="keep")["Rules"] == lc
    assert json.loads(s3.get_bucket_policy(Bucket="keep")["Policy"]) == no_delete
    with pytest.raises(ClientError) as e:
        s3.delete_object(Bucket="keep", Key="k")
    assert e.value.response["Error"]["Code"] == "AccessDenied"

    listed = s3.list_parts(Bucket="keep", Key="mp", UploadId=up)
    assert [(p["PartNumber"], p["ETag"], p["ChecksumCRC32"]) for p in listed["Parts"]] == [
        (1, e1["ETag"], e1["ChecksumCRC32"])]
    e2 = s3.upload_part(Bucket="keep", Key="mp", UploadId=up, PartNumber=2, Body=p2, ChecksumAlgorithm="CRC32")
    done = s3.complete_multipart_upload(Bucket="keep", Key="mp", UploadId=up, MultipartUpload={"Parts": [
        {"PartNumber": n, "ETag": p["ETag"], "ChecksumCRC32": p["ChecksumCRC32"]} for n, p in ((1, e1), (2, e2))]})
    assert done["ChecksumCRC32"].endswith("-2")
    assert s3.get_object(Bucket="keep", Key="mp")["Body"].read() == p1 + p2
    kill9_gateway(ceph_twin)  # a completed upload does not come back as one in progress
    assert "Uploads" not in s3.list_multipart_uploads(Bucket="keep")
    assert s3.get_object(Bucket="keep", Key="mp")["Body"].read() == p1 + p2


def test_lifecycle_expires_objects_on_the_twins_days(ceph_twin: CephAdmin, s3: Any) -> None:
    """The gateway's lifecycle worker, with a day of 1 s: scratch data goes after 2 days, the rest stays."""
    s3.create_bucket(Bucket="lc-scratch")
    s3.put_object(Bucket="lc-scratch", Key="scratch/a", Body=b"a")
    s3.put_object(Bucket="lc-scratch", Key="curated/b", Body=b"b")
    up = s3.create_multipart_upload(Bucket="lc-scratch", Key="scratch/stuck")["UploadId"]
    t0 = time.monotonic()
    s3.put_bucket_lifecycle_configuration(Bucket="lc-scratch", LifecycleConfiguration={"Rules": [
        {"ID": "scratch", "Filter": {"Prefix": "scratch/"}, "Status": "Enabled", "Expiration": {"Days": 2},
         "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 2}}]})

    def listed() -> list[str]:
        return [o["Key"] for o in s3.list_objects_v2(Bucket="lc-scratch").get("Contents", [])]

    wait_for("scratch/a expired", lambda: listed() == ["curated/b"], timeout=15, every=0.1)
    assert time.monotonic() - t0 >= 2 * LC_DAY / SCALE - 0.5  # not before its two days
    wait_for("the upload aborted", lambda: "Uploads" not in s3.list_multipart_uploads(Bucket="lc-scratch"), timeout=10)
    with pytest.raises(ClientError) as e:
        s3.list_parts(Bucket="lc-scratch", Key="scratch/stuck", UploadId=up)
    assert e.value.response["Error"]["Code"] == "NoSuchUpload"
    log = (ceph_twin.run.logs / "ceph-rgw.log").read_text()
    assert "lifecycle lc-scratch: 1 objects expired" in log


def test_a_user_is_usable_the_moment_it_is_created(ceph_twin: CephAdmin) -> None:
    """The gateway asks the monitor again for an unknown key, however recently it last asked."""
    ak, sk = "CEPHFRESHKEY00000001", "fresh-secret-0000000000000000000000000001"
    fresh = boto3.client("s3", endpoint_url=ceph_twin.s3_endpoint(), aws_access_key_id=ak, aws_secret_access_key=sk,
                         region_name="us-east-1", config=Config(retries={"max_attempts": 0}))
    with pytest.raises(ClientError) as e:
        fresh.list_buckets()  # unknown: the gateway has just asked the monitor
    assert e.value.response["Error"]["Code"] == "InvalidAccessKeyId"
    # created through the monitor's API straight away (a script's next line), well inside the 0.2 s
    # the gateway used to wait between two lookups of unknown keys
    ceph_twin.call("UserCreate", pb.CephMonUserCreateRequest(user=pb.CephRgwUser(uid="fresh", display_name="Fresh",
                                                                       access_key=ak, secret_key=sk)))
    assert fresh.list_buckets()["Owner"]["ID"] == "fresh"  # at once, not after a refresh interval
