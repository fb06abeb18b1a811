"""The MDS and OSS daemons on the twin's server skeleton, against one `twin up rack --lustre` (loopback, no
mount): gRPC health and reflection on both of each server's addresses (a standby MDS and a downed OSS say
NOT_SERVING for their service), the errno of a refusal as structured data (trailing metadata, not the
details text), and the OSS fault API (InjectFault / ListFaults / ClearFault) with its bus events, its
state across a kill -9, and the twin clock on its times."""

from __future__ import annotations

import errno
import importlib.util
from collections.abc import Callable, Iterator
from typing import Any

import grpc
import pytest
from google.protobuf.descriptor_pool import DescriptorPool
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import ProtoReflectionDescriptorDatabase

from clustertwin.v1 import lustre_pb2 as pb
from clustertwin.v1 import lustre_pb2_grpc as pb_grpc
from emulator.client import Twin
from emulator.manifest import DaemonEntry
from emulator.rundir import RunDir, RunDirError
from emulator.sdk import daemons
from services.lustre.client.core import ClientError, LustreClient
from services.lustre.manifest import LustreSection
from services.lustre.sdk import LustreAdmin
from services.lustre.wire import dir_cookie
from tests.lustre.conftest import twin_cli
from tests.lustre.test_lustre_events import Events
from tests.waiting import wait_for

SERVING, NOT_SERVING = health_pb2.HealthCheckResponse.SERVING, health_pb2.HealthCheckResponse.NOT_SERVING


@pytest.fixture(scope="module")
def rack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Twin]:
    run = tmp_path_factory.mktemp("lustre-daemons") / "run"
    twin_cli("up", "rack", "--lustre", "--clock-scale", "3600", run=run)
    try:
        yield Twin.connect(run)
    finally:
        twin_cli("down", run=run, check=False)


def servers(twin: Twin) -> list[DaemonEntry]:
    return [d for d in twin.daemons() if d.kind in ("lustre_mds", "lustre_oss")]


def health(address: str, service: str = "") -> int:
    with grpc.insecure_channel(address) as ch:
        return health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(service=service), timeout=5).status


def restarted(run: RunDir, name: str, old_pid: int) -> bool:
    try:
        return daemons.running_pid(run, name) != old_pid
    except RunDirError:   # between the kill and the restart
        return False


def role(d: dict[str, Any]) -> str:
    with grpc.insecure_channel(d.admin) as ch:
        return pb_grpc.LustreMdsStub(ch).Status(pb.LustreMdsStatusRequest(), timeout=5).role


def test_health_and_reflection_on_both_addresses(rack: Twin) -> None:
    for d in servers(rack):
        for address in (d.grpc, d.admin):
            assert health(address) == SERVING, (d.name, address)
            with grpc.insecure_channel(address) as ch:
                db = ProtoReflectionDescriptorDatabase(ch)
                assert {d.service, "grpc.health.v1.Health", "grpc.reflection.v1alpha.ServerReflection"} \
                    <= set(db.get_services()), (d.name, address)
                if d.kind == "lustre_oss":   # the fault API, described by the server itself
                    methods = {m.name for m in DescriptorPool(db).FindServiceByName(d.service).methods}
                    assert {"InjectFault", "ClearFault", "ListFaults"} <= methods


def test_the_standby_mds_is_not_serving_its_service(rack: Twin) -> None:
    mds = [d for d in servers(rack) if d.kind == "lustre_mds"]
    wait_for("an active MDS", lambda: "active" in {role(d) for d in mds})
    for d in mds:
        want = SERVING if role(d) == "active" else NOT_SERVING
        assert health(d.admin, d.service) == want == health(d.grpc, d.service), d.name
    standby = next(d for d in mds if role(d) == "standby")
    with grpc.insecure_channel(standby.admin) as ch, pytest.raises(grpc.RpcError) as e:
        pb_grpc.LustreMdsStub(ch).Getattr(pb.LustreMdsGetattrRequest(path="/"), timeout=5)
    assert e.value.code() == grpc.StatusCode.UNAVAILABLE and ("lustre-errno", "EAGAIN") in e.value.trailing_metadata()


def test_the_errno_travels_as_metadata(rack: Twin) -> None:
    c = LustreClient.from_manifest(rack.manifest, failover_timeout=10.0, plane="admin")
    try:
        c.mkdir("/errno")
        calls = [(lambda: c.getattr("/errno/missing"), "ENOENT"), (lambda: c.mkdir("/errno"), "EEXIST"),
                 (lambda: c.setstripe("/errno/f", size=1000), "EINVAL")]
        for call, name in calls:
            with pytest.raises(ClientError) as err:
                call()
            assert err.value.errno == getattr(errno, name)
        raw = pb_grpc.LustreMdsStub(c.mds.channels[c.mds.current])
        with pytest.raises(grpc.RpcError) as e:
            raw.Getattr(pb.LustreMdsGetattrRequest(path="/errno/missing"), timeout=5)
        assert e.value.code() == grpc.StatusCode.NOT_FOUND
        assert ("lustre-errno", "ENOENT") in e.value.trailing_metadata()
        assert not e.value.details().startswith("ENOENT"), e.value.details()   # the text is for people
    finally:
        c.close()


def test_fault_inject_list_clear_with_events(rack: Twin) -> None:

    clock = rack.manifest.clock.to_clock()
    events = Events(rack.manifest)
    lu = LustreAdmin(rack.run, rack.manifest)
    oss01 = next(d for d in servers(rack) if d.name == "oss01")
    try:
        before = clock.now()
        f = lu.inject_fault("oss-kill", "oss01")
        assert f.id and f.kind == "oss-kill" and f.oss == "oss01" and f.active
        assert before <= f.injected_at <= clock.now()   # the twin clock: hours ahead of the wall's
        ev = events.wait("fault")
        assert ev["node"] == "oss01" and ev["fault"]["id"] == f.id and ev["fault"]["active"], ev
        assert [x.id for x in lu.list_faults()] == [f.id]
        with pytest.raises(ClientError, match="already active"):
            lu.inject_fault("oss-kill", "oss01")
        assert health(oss01.admin, oss01.service) == NOT_SERVING
        events.wait("oss_failover", to="oss02")
        old = daemons.kill(rack.run, "oss01")   # the fault is in its store: back, still down
        wait_for("oss01 restarted", lambda: restarted(rack.run, "oss01", old))
        assert [x.id for x in lu.list_faults()] == [f.id]
        cleared = lu.clear_fault(f.id)
        assert not cleared.active and cleared.cleared_at >= f.injected_at
        ev = events.wait("fault_clear")
        assert ev["fault"]["id"] == f.id and not ev["fault"]["active"], ev
        assert lu.list_faults() == [] and [x.id for x in lu.list_faults(include_cleared=True)] == [f.id]
        with pytest.raises(KeyError, match="no Lustre fault"):
            lu.clear_fault("oss01-down-99")
        events.wait("oss_failback", to="oss01")
        wait_for("oss01 serving", lambda: health(oss01.admin, oss01.service) == SERVING)
    finally:
        lu.close()
        events.close()


def test_faults_are_listed_in_pages(rack: Twin) -> None:
    lu = LustreAdmin(rack.run, rack.manifest)
    oss01 = next(d for d in servers(rack) if d.name == "oss01")
    try:
        wait_for("oss01 serving its OSTs", lambda: {t.index: t.server for t in lu.statfs().osts if t.active}
                 .items() >= {0: "oss01", 1: "oss01"}.items())
        a, b = lu.inject_fault("ost-full", 0), lu.inject_fault("ost-full", 1)
        assert a.oss == b.oss == "oss01" and a.ost == 0 and b.ost == 1
        with grpc.insecure_channel(oss01.admin) as ch:
            stub = pb_grpc.LustreOssStub(ch)
            first = stub.ListFaults(pb.LustreOssListFaultsRequest(page_size=1), timeout=5)
            second = stub.ListFaults(pb.LustreOssListFaultsRequest(page_size=1, page_token=first.next_page_token),
                                     timeout=5)
            assert [f.id for f in first.faults] == [a.id] and first.next_page_token
            assert [f.id for f in second.faults] == [b.id] and second.next_page_token == ""
            with pytest.raises(grpc.RpcError) as e:
                stub.ListFaults(pb.LustreOssListFaultsRequest(page_token="x"), timeout=5)
            assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert ("lustre-errno", "EINVAL") in e.value.trailing_metadata()
    finally:
        lu.restore_ost(0)
        lu.restore_ost(1)
        assert lu.list_faults() == []
        lu.close()


def test_twin_lustre_and_its_commands_come_from_the_service(rack: Twin) -> None:
    from emulator.client import Twin
    from emulator.service import services

    assert importlib.util.find_spec("emulator.cli.lustre") is None and importlib.util.find_spec("emulator.sdk.lustre") \
        is None   # moved into the service
    assert services()["lustre"].cli == {"lustre": "services.lustre.cli:app"}
    fsname = LustreSection.require(rack.manifest, rack.run.path).fsname
    with Twin.connect(rack.run.path).lustre() as lu:
        assert isinstance(lu, LustreAdmin) and lu.statfs().fsname == fsname
    assert twin_cli("lustre", "fault", "list", run=rack.run.path).stdout.startswith("ID ")


def test_a_new_active_mds_connects_to_its_osts_before_it_serves(rack: Twin) -> None:
    """Every server killed at once: the standby takes the MDT over while the OSSs restart; the first file it
    creates gets its objects (a standby that polled the OSSs once would find every OST inactive: ENOSPC)."""
    run = rack.run
    mds = [d for d in servers(rack) if d.kind == "lustre_mds"]
    active = wait_for("an active MDS", lambda: next((d for d in mds if role(d) == "active"), None))
    for name in ("oss01", "oss02", active.name):
        daemons.kill(run, name)
    c = LustreClient.from_manifest(rack.manifest, failover_timeout=60.0, plane="admin")
    try:
        a = c.create("/created-after-failover")
        assert a.HasField("layout") and len(a.layout.objects) >= 1
    finally:
        c.close()


def readdir_pages(stub: Any, path: str, size: int) -> list[list[str]]:
    pages, token = [], None
    while token != "":
        r = stub.Readdir(pb.LustreMdsReaddirRequest(path=path, page_size=size, page_token=token or ""), timeout=10)
        pages.append([e.name for e in r.entries])
        token = r.next_page_token
    return pages


def test_readdir_goes_page_by_page_in_cookie_order_and_the_client_reads_them_all(rack: Twin) -> None:
    """Lustre's readdir pages go in hash-cookie order: an entry removed or added between two pages moves
    no other across the page boundary. The client (and so the FUSE mount) follows the pages to the end."""
    c = LustreClient.from_manifest(rack.manifest, failover_timeout=10.0, plane="admin")
    try:
        c.mkdir("/big")
        names = [f"f{i:04d}" for i in range(1050)]   # more than one of the client's pages (1000)
        for n in names:
            c.create(f"/big/{n}")
        assert sorted(e.name for e in c.readdir("/big")) == names
        stub = pb_grpc.LustreMdsStub(c.mds.channels[c.mds.current])
        pages = readdir_pages(stub, "/big", 100)
        assert [len(p) for p in pages] == [100] * 10 + [50]
        order = [n for p in pages for n in p]
        assert order == sorted(names, key=dir_cookie) != names
        # between the first and the second page: one entry of the first page goes, a new one comes
        first = stub.Readdir(pb.LustreMdsReaddirRequest(path="/big", page_size=100), timeout=10)
        c.unlink(f"/big/{first.entries[0].name}")
        c.create("/big/new-entry")
        rest = stub.Readdir(pb.LustreMdsReaddirRequest(path="/big", page_size=2000,
                                                       page_token=first.next_page_token), timeout=10)
        seen = [e.name for e in first.entries] + [e.name for e in rest.entries]
        assert sorted(set(seen) - {"new-entry"}) == names and len(seen) == len(set(seen))
        for bad in ("x", first.next_page_token[:-2]):
            with pytest.raises(grpc.RpcError) as e:
                stub.Readdir(pb.LustreMdsReaddirRequest(path="/big", page_token=bad), timeout=10)
            assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT, bad
            assert ("lustre-errno", "EINVAL") in e.value.trailing_metadata()
    finally:
        c.close()


def test_listxattr_pages(rack: Twin) -> None:
    c = LustreClient.from_manifest(rack.manifest, failover_timeout=10.0, plane="admin")
    try:
        c.create("/xattrs")
        for n in ("user.c", "user.a", "user.b"):
            c.mdcall("Setxattr", pb.LustreMdsSetxattrRequest(path="/xattrs", name=n, value=b"v"))
        stub = pb_grpc.LustreMdsStub(c.mds.channels[c.mds.current])
        first = stub.Listxattr(pb.LustreMdsListxattrRequest(path="/xattrs", page_size=2), timeout=10)
        second = stub.Listxattr(pb.LustreMdsListxattrRequest(path="/xattrs", page_size=2,
                                                             page_token=first.next_page_token), timeout=10)
        assert list(first.names) == ["user.a", "user.b"] and list(second.names) == ["user.c"]
        assert second.next_page_token == "" and c.listxattr("/xattrs") == ["user.a", "user.b", "user.c"]
    finally:
        c.close()


def next_event(stream: Iterator[Any], cond: Callable[[Any], bool]) -> Any:
    return next(ev for ev in stream if cond(ev))


def test_watch_events_streams_what_each_server_publishes(rack: Twin) -> None:
    """An ost-full fault: the OSS's WatchEvents replays its fault event (with the fault record) and streams
    the fault_clear as it happens; the active MDS's shows the OST full, then not."""
    lu = LustreAdmin(rack.run, rack.manifest)
    mds = [d for d in servers(rack) if d.kind == "lustre_mds"]
    active = wait_for("an active MDS", lambda: next((d for d in mds if role(d) == "active"), None))
    try:
        wait_for("oss01 serving OST0000", lambda: {t.index: t.server for t in lu.statfs().osts if t.active}
                 .get(0) == "oss01")
        f = lu.inject_fault("ost-full", 0)
        oss = lu.events("oss01", timeout=60)
        ev = next_event(oss, lambda e: e.kind == "fault" and e.fault.id == f.id)
        assert ev.node == "oss01" and ev.HasField("ost") is False and ev.fault.ost == 0 and ev.fault.active
        assert ev.seq > 0 and ev.time > 0 and ev.message
        md = lu.events(active.name, timeout=60)
        full = next_event(md, lambda e: e.kind == "ost_full" and e.ost == 0)
        assert full.node == active.name and full.HasField("ost")
        lu.restore_ost(0)
        cleared = next_event(oss, lambda e: e.kind == "fault_clear")
        assert cleared.fault.id == f.id and not cleared.fault.active and cleared.seq > ev.seq
        assert next_event(md, lambda e: e.kind == "ost_full_clear").ost == 0
        oss.close()
        md.close()
        with pytest.raises(KeyError):
            next(lu.events("oss99"))
    finally:
        if lu.list_faults():
            lu.restore_ost(0)
        lu.close()
