"""The gateway moves the data pool's chunks straight to and from the OSDs (services/ceph/rgw/direct_io.py),
as librados does, and the monitor keeps the objects' metadata. Against a real
`twin up mini --ceph --storage-timing fast`: with the monitor frozen (SIGSTOP), an object the gateway
wrote still reads back whole (only the OSDs answer); with one of its data chunks corrupted on its OSD,
the read still returns the object (the CRC check refuses the chunk, the monitor decodes from the others);
with an OSD stopped after the gateway learnt the plans, writes follow the new plans (the monitor refuses
a commit by a stale plan) and every object reads back, degraded, then clean once the OSD is back. The
OSDs are on the gateway's host, so it reads their chunks through their files (msgr_local.py); an OSD
killed and restarted under it serves the object written since, not what the gateway had mapped."""

from __future__ import annotations

import hashlib
import os
import re
import signal
import subprocess
from collections.abc import Iterator

import boto3
import pytest
from botocore.config import Config

from clustertwin.v1 import ceph_pb2 as pb
from services.ceph.sdk import CephAdmin
from tests.ceph import helpers
from tests.waiting import wait_for

DATA = "default.rgw.buckets.data"
AK, SK = "AKDIRECT000000000000", "direct-secret"


@pytest.fixture(scope="module")
def twin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CephAdmin]:
    with helpers.ceph_twin(tmp_path_factory, "direct", storage_timing="fast") as admin:
        admin.mon.UserCreate(pb.CephMonUserCreateRequest(user=pb.CephRgwUser(
            uid="direct", display_name="direct", access_key=AK, secret_key=SK)), timeout=30)
        yield admin


@pytest.fixture(scope="module")
def s3(twin: CephAdmin):  # noqa: ANN201 - boto3's client type
    c = boto3.client("s3", endpoint_url=twin.s3_endpoint(), aws_access_key_id=AK, aws_secret_access_key=SK,
                     region_name="us-east-1", config=Config(retries={"max_attempts": 0}, read_timeout=20,
                                                            s3={"addressing_style": "path"}))
    c.create_bucket(Bucket="direct")
    return c


def test_a_read_needs_no_monitor(twin: CephAdmin, s3) -> None:  # noqa: ANN001
    body = os.urandom((9 << 20) + 123)   # a head and two tails: three RADOS objects
    s3.put_object(Bucket="direct", Key="big", Body=body)
    s3.put_object(Bucket="direct", Key="small", Body=b"tiny object")
    mon = twin.pid("ceph-mon")
    os.kill(mon, signal.SIGSTOP)
    try:
        got = s3.get_object(Bucket="direct", Key="big")["Body"].read()
        small = s3.get_object(Bucket="direct", Key="small")["Body"].read()
        # Ranges over 1 MiB: whole RADOS objects are sent as gathered pieces, cut ones as slices
        ranges = [(0, (2 << 20) - 1), ((4 << 20) - 10, (8 << 20) + 10), (5 << 20, len(body) - 1)]
        parts = [s3.get_object(Bucket="direct", Key="big", Range=f"bytes={lo}-{hi}")["Body"].read()
                 for lo, hi in ranges]
    finally:
        os.kill(mon, signal.SIGCONT)
    assert hashlib.sha256(got).digest() == hashlib.sha256(body).digest()
    assert small == b"tiny object"
    assert [hashlib.sha256(p).digest() for p in parts] == [hashlib.sha256(body[lo: hi + 1]).digest()
                                                           for lo, hi in ranges]


def test_a_corrupt_data_chunk_is_read_through_the_monitor(twin: CephAdmin, s3) -> None:  # noqa: ANN001
    body = os.urandom(100_000)
    s3.put_object(Bucket="direct", Key="rot", Body=body)
    head = [o.name for o in twin.mon.ListObjects(pb.CephMonListObjectsRequest(pool=DATA), timeout=30).objects
            if o.name.endswith("_rot")]
    assert len(head) == 1, head
    twin.mon.CorruptChunk(pb.CephMonCorruptChunkRequest(pool=DATA, object=head[0]), timeout=30)   # shard 0's
    assert s3.get_object(Bucket="direct", Key="rot")["Body"].read() == body


def test_writes_after_an_osd_stops_follow_the_new_plans(twin: CephAdmin, s3) -> None:  # noqa: ANN001
    bodies = {f"before-{i}": os.urandom(5000 + i) for i in range(24)}
    for key, body in bodies.items():   # the gateway now knows most PGs' plans, with osd.4 in them
        s3.put_object(Bucket="direct", Key=key, Body=body)
    fault = twin.inject_fault(4, "stop")   # marked down at once: every plan naming it is stale
    try:
        after = {f"after-{i}": os.urandom(7000 + i) for i in range(24)}
        for key, body in after.items():
            s3.put_object(Bucket="direct", Key=key, Body=body)
        bodies.update(after)
        for key, body in bodies.items():
            assert s3.get_object(Bucket="direct", Key=key)["Body"].read() == body, key
        degraded = twin.call("Status", pb.CephMonStatusRequest()).pg_states
        assert any("degraded" in state for state in degraded), dict(degraded)
    finally:
        twin.clear_fault(fault.id, 4)
    wait_for("active+clean", lambda: helpers.all_clean(twin), timeout=60)
    for key, body in bodies.items():
        assert s3.get_object(Bucket="direct", Key=key)["Body"].read() == body, key


def _chunks_of(twin: CephAdmin, obj: str) -> list[tuple[int, int]]:
    """(OSD, shard) of every chunk of RADOS object `obj` the OSD daemons hold."""
    out = []
    for n in range(15):
        listed = twin.osd(n, "ListChunks", pb.CephOsdListChunksRequest(page_size=1000)).chunks
        out += [(n, c.key.shard) for c in listed if c.key.object == obj]
    return sorted(out)


def test_a_deleted_object_leaves_neither_metadata_nor_chunks(twin: CephAdmin, s3) -> None:  # noqa: ANN001
    s3.put_object(Bucket="direct", Key="gc-me", Body=os.urandom(20_000))
    (head,) = [o.name for o in twin.mon.ListObjects(pb.CephMonListObjectsRequest(pool=DATA), timeout=30).objects
               if o.name.endswith("_gc-me")]
    assert len(_chunks_of(twin, head)) == 11   # every EC 8+3 shard on its OSD
    s3.delete_object(Bucket="direct", Key="gc-me")
    listed = twin.mon.ListObjects(pb.CephMonListObjectsRequest(pool=DATA), timeout=30).objects
    assert head not in [o.name for o in listed]   # the metadata went before the answer
    wait_for("the chunks deleted", lambda: not _chunks_of(twin, head), timeout=30)   # not waited for


def _heads(twin: CephAdmin, key: str) -> list[str]:
    return [o.name for o in twin.mon.ListObjects(pb.CephMonListObjectsRequest(pool=DATA), timeout=30).objects
            if o.name.endswith("_" + key)]


def test_an_overwritten_object_goes_to_the_gc_and_its_chunks_follow(twin: CephAdmin, s3) -> None:  # noqa: ANN001
    """An overwrite answers without removing the old version; the gateway's gc pass (every second,
    rgw/daemon.py) removes its metadata and its chunks; the new version reads back throughout."""
    s3.put_object(Bucket="direct", Key="overwritten", Body=b"old" * 3000)
    (old,) = _heads(twin, "overwritten")
    new_body = os.urandom(20_000)
    s3.put_object(Bucket="direct", Key="overwritten", Body=new_body)
    assert s3.get_object(Bucket="direct", Key="overwritten")["Body"].read() == new_body
    wait_for("the old version's metadata removed by the gc", lambda: old not in _heads(twin, "overwritten"),
             timeout=30)
    wait_for("its chunks deleted", lambda: not _chunks_of(twin, old), timeout=30)
    (new,) = _heads(twin, "overwritten")
    assert new != old and len(_chunks_of(twin, new)) == 11
    assert s3.get_object(Bucket="direct", Key="overwritten")["Body"].read() == new_body


def _running(twin: CephAdmin, name: str) -> int:
    try:
        return twin.pid(name)
    except Exception:  # noqa: BLE001 - not running (being restarted)
        return 0


def _msgr_peers(pid: int) -> set[str]:
    """The OSD messengers the process `pid` is connected to over Unix sockets (`ss -xp`: each OSD-side
    socket names its peer's inode, which belongs to the client's process)."""
    out = subprocess.run(["ss", "-xpnH"], capture_output=True, text=True, check=True).stdout
    owner: dict[str, int] = {}
    named: dict[str, str] = {}   # a client's inode -> the messenger it is connected to
    for line in out.splitlines():
        f = line.split()
        if len(f) < 8:
            continue
        local, inode, peer_inode = f[4], f[5], f[7]
        m = re.search(r"pid=(\d+)", line)
        if m:
            owner[inode] = int(m.group(1))
        if local.startswith("@clustertwin-msgr-"):
            named[peer_inode] = local
    return {named[ino] for ino, p in owner.items() if p == pid and ino in named}


def test_this_hosts_osds_are_read_through_their_files_and_a_kill9_under_it_serves_the_new_data(
        twin: CephAdmin, s3) -> None:  # noqa: ANN001
    first = os.urandom((5 << 20) + 7)   # a head and a tail: two RADOS objects, each chunk from a file
    s3.put_object(Bucket="direct", Key="mapped", Body=first)
    assert s3.get_object(Bucket="direct", Key="mapped")["Body"].read() == first   # the gateway maps the segments
    assert len(_msgr_peers(twin.pid("ceph-rgw"))) >= 8   # over the OSDs' Unix sockets, not TCP
    head = [o for o in twin.mon.ListObjects(pb.CephMonListObjectsRequest(pool=DATA), timeout=30).objects
            if o.name.endswith("_mapped") and "__:" in o.name]
    assert len(head) == 1, head
    pg = twin.call("Pgs", pb.CephMonPgsRequest(pool=DATA, object=head[0].name)).pgs[0]
    name = f"osd.{pg.acting[0]}"   # holds the head's first data chunk
    old = twin.kill(name)
    second = os.urandom((5 << 20) + 7)
    s3.put_object(Bucket="direct", Key="mapped", Body=second)   # while the OSD is away or restarting
    assert hashlib.sha256(s3.get_object(Bucket="direct", Key="mapped")["Body"].read()).digest() == \
        hashlib.sha256(second).digest()
    wait_for("the OSD restarted", lambda: _running(twin, name) not in (0, old), timeout=20)
    wait_for("active+clean", lambda: helpers.all_clean(twin), timeout=60)
    assert hashlib.sha256(s3.get_object(Bucket="direct", Key="mapped")["Body"].read()).digest() == \
        hashlib.sha256(second).digest()
