"""The Ceph gRPC contract on real daemons (`twin up mini --ceph`): the List RPCs page (page_size,
opaque page_token, INVALID_ARGUMENT for a bad one), the SDK and the gateway follow the pages, and each
service's WatchEvents streams what a client would watch: the monitor's map and fault events (`ceph -w`),
an OSD daemon's own state changes, the RBD service's header updates (`rbd watch`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import grpc
import pytest

from clustertwin.v1 import ceph_pb2 as pb
from clustertwin.v1 import ceph_pb2_grpc as pb_grpc
from services.ceph.rgw.mon_client import MonCluster
from services.ceph.sdk import CephAdmin
from tests.ceph import helpers

DATA = "default.rgw.buckets.data"
WATCH_S = 20.0   # gRPC deadline on a watch: a missing event fails the test instead of hanging it


@pytest.fixture(scope="module")
def twin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CephAdmin]:
    with helpers.ceph_twin(tmp_path_factory, "ceph-api") as admin:
        yield admin


def code_of(call: Callable[[], object]) -> grpc.StatusCode:
    with pytest.raises(grpc.RpcError) as e:
        call()
    return e.value.code()


def first(stream: Iterator[pb.CephEvent], match: Callable[[pb.CephEvent], bool]) -> pb.CephEvent:
    """The first event of a watch that matches (its deadline ends a watch that has none); closing the
    SDK's generator cancels the call."""
    try:
        return next(ev for ev in stream if match(ev))
    finally:
        stream.close()   # type: ignore[attr-defined]


def test_list_objects_pages_and_the_clients_follow_them(twin: CephAdmin) -> None:
    names = [f"paged-{i:02d}" for i in range(7)]
    for n in reversed(names):
        twin.mon.PutObject(pb.CephMonPutObjectRequest(pool=DATA, name=n, data=n.encode()))
    req = pb.CephMonListObjectsRequest(pool=DATA, prefix="paged-", page_size=3)
    pages = []
    while True:
        reply = twin.mon.ListObjects(req)
        pages.append([o.name for o in reply.objects])
        if not reply.next_page_token:
            break
        req.page_token = reply.next_page_token
    assert pages == [names[0:3], names[3:6], names[6:]]
    # The SDK joins every page of a List RPC called without a token; the gateway's client too.
    joined = twin.call("ListObjects", pb.CephMonListObjectsRequest(pool=DATA, prefix="paged-", page_size=2))
    assert [o.name for o in joined.objects] == names and not joined.next_page_token
    assert [o.name for o in MonCluster(twin.mon_address).list_objects(DATA, "paged-")] == names


def test_bad_page_tokens_and_sizes_are_refused(twin: CephAdmin) -> None:
    faults = twin.mon.ListFaults(pb.CephMonListFaultsRequest(include_cleared=True, page_size=1))
    other = faults.next_page_token or "TGlzdEZhdWx0czow"   # base64 of "ListFaults:0": another RPC's token
    for bad in (pb.CephMonListObjectsRequest(pool=DATA, page_token="not a token"),
                pb.CephMonListObjectsRequest(pool=DATA, page_token=other),
                pb.CephMonListObjectsRequest(pool=DATA, page_size=-1)):
        assert code_of(lambda b=bad: twin.mon.ListObjects(b)) == grpc.StatusCode.INVALID_ARGUMENT
    with grpc.insecure_channel(twin.osd_entry(0).grpc) as ch:
        osd = pb_grpc.CephOsdStub(ch)
        assert code_of(lambda: osd.ListChunks(pb.CephOsdListChunksRequest(page_token="x"))) == \
            grpc.StatusCode.INVALID_ARGUMENT
    rbd = pb_grpc.CephRbdStub(twin.channel)
    assert code_of(lambda: rbd.List(pb.CephRbdListRequest(page_token="x"))) == grpc.StatusCode.INVALID_ARGUMENT


def test_osd_chunks_faults_and_images_page(twin: CephAdmin) -> None:
    twin.mon.PutObject(pb.CephMonPutObjectRequest(pool=DATA, name="chunked", data=b"c" * 100_000))
    with grpc.insecure_channel(twin.osd_entry(0).grpc) as ch:
        osd = pb_grpc.CephOsdStub(ch)
        everything = [c.key for c in twin.call("ListChunks", pb.CephOsdListChunksRequest(page_size=1), stub=osd).chunks]
        one = osd.ListChunks(pb.CephOsdListChunksRequest(page_size=1))
        assert len(one.chunks) == 1 and bool(one.next_page_token) == (len(everything) > 1)
    for i in range(2):
        twin.inject_fault(i, "down")   # over at once: logged cleared
    logged = twin.mon.ListFaults(pb.CephMonListFaultsRequest(include_cleared=True, page_size=1))
    assert len(logged.faults) == 1 and logged.next_page_token
    assert len(twin.list_faults(include_cleared=True)) >= 2   # the SDK joins the pages
    rbd = twin.rbd()
    for n in ("pa", "pb", "pc"):
        rbd.create("rbd", n, 1 << 20)
    page = rbd.stub.List(pb.CephRbdListRequest(pool="rbd", page_size=2))
    assert page.names == ["pa", "pb"] and page.next_page_token
    assert rbd.list("rbd") == ["pa", "pb", "pc"]


def test_monitor_watch_streams_map_events(twin: CephAdmin) -> None:
    twin.osd_command(2, "out")
    try:
        # replayed: it happened before the watch
        out = first(twin.events(timeout=WATCH_S), lambda ev: ev.kind == "osd_out")
        assert out.osd == 2 and out.epoch > 0 and out.message == "osd.2 marked out"
        twin.osd_command(2, "in")
        back = first(twin.events(since_seq=out.seq, timeout=WATCH_S), lambda ev: ev.kind == "osd_in")
        assert back.osd == 2 and back.seq > out.seq
    finally:
        twin.osd_command(2, "in")
    f = twin.inject_fault(4, "slow", factor=3)
    twin.clear_fault(f.id)
    cleared = first(twin.events(since_seq=back.seq, timeout=WATCH_S), lambda ev: ev.kind == "fault_clear")
    assert cleared.fault.id == f.id and cleared.osd == 4 and not cleared.fault.active


def test_osd_watch_streams_its_own_state(twin: CephAdmin) -> None:
    helpers.osd_fault(twin, 5, slow_factor=2.5)
    helpers.osd_fault(twin, 5, slow_factor=1.0)
    slow = first(twin.osd_events(5, timeout=WATCH_S), lambda ev: ev.kind == "osd_slow")
    assert slow.osd == 5 and slow.host and slow.message == "osd.5: slow disk factor 2.5"
    healed = first(twin.osd_events(5, since_seq=slow.seq, timeout=WATCH_S), lambda ev: ev.kind == "osd_slow")
    assert healed.message == "osd.5: slow disk factor 1"


def test_rbd_watch_streams_one_images_header_updates(twin: CephAdmin) -> None:
    rbd = twin.rbd()
    rbd.create("rbd", "watched", 4 << 20)
    rbd.create("rbd", "other", 4 << 20)
    rbd.resize("rbd", "watched", 8 << 20)
    rbd.snap("SnapCreate", "rbd", "watched", "s1")
    stream = rbd.watch("rbd", "watched", timeout=WATCH_S)
    seen = [next(stream) for _ in range(3)]
    stream.close()   # type: ignore[attr-defined]
    assert {(ev.kind, ev.pool, ev.image) for ev in seen} == {("header_update", "rbd", "watched")}
    assert [ev.message for ev in seen] == ["rbd/watched: create", "rbd/watched: resize", "rbd/watched: snap create s1"]
