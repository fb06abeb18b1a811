"""Operating the fabric through the fabric manager (real ibsim + OpenSM on the rack fabric): port
reset, UFM's unhealthy ports and alarms, the analysis of what faults cost, and the collective-time
model reading the live fabric. Each test leaves the fabric healthy."""

from __future__ import annotations

import grpc
import pytest

from clustertwin.v1 import fabric_pb2 as pb
from tests.fabric.conftest import REASON, FabricUnderTest

pytestmark = pytest.mark.skipif(bool(REASON), reason=REASON or "n/a")

GIB = 1 << 30


def _port(twin: FabricUnderTest, node: str) -> pb.FabricPort:
    (port,) = twin.stub.ListPorts(pb.FabricListPortsRequest(system=node)).ports
    return port


def _estimate(twin: FabricUnderTest, servers: list[str], **kw: object) -> pb.FabricEstimateCollectiveResponse:
    req = pb.FabricEstimateCollectiveRequest(op="all_reduce", ranks=8 * len(servers), bytes=GIB, servers=servers, **kw)
    return twin.stub.EstimateCollective(req)


def test_port_reset_goes_down_and_up(twin: FabricUnderTest) -> None:
    port = _port(twin, "gpu002 mlx5_1")
    before = len(twin.rest("/app/events")[1])
    status, doc = twin.rest("/actions", {"action": "port_reset", "params": {"port_id": port.name}})
    assert status == 202 and doc["port"]["logical_state"] == "Active", doc
    kinds = [e["event_type"] for e in twin.rest("/app/events")[1][before:]]
    assert kinds == ["port_down", "port_up"]
    assert not twin.stub.ListAlarms(pb.FabricListAlarmsRequest()).alarms
    # a disabled port is not reset: it is enabled
    twin.stub.SetPortState(pb.FabricSetPortStateRequest(system=port.name, enabled=False), timeout=30)
    try:
        with pytest.raises(grpc.RpcError) as e:
            twin.stub.ResetPort(pb.FabricResetPortRequest(system=port.name))
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "enable it" in (e.value.details() or "")
        (alarm,) = twin.stub.ListAlarms(pb.FabricListAlarmsRequest()).alarms
        assert alarm.name == "Link is down" and alarm.object_name == port.name
        assert alarm.object_path == "Computer: gpu002 / mlx5_1" and alarm.severity == "Critical"
    finally:
        twin.stub.SetPortState(pb.FabricSetPortStateRequest(system=port.name, enabled=True), timeout=30)
    assert not twin.stub.ListAlarms(pb.FabricListAlarmsRequest()).alarms


def test_unhealthy_port_is_isolated_until_marked_healthy(twin: FabricUnderTest) -> None:
    port = _port(twin, "gpu003 mlx5_2")
    status, doc = twin.rest("/app/unhealthy_ports", {"ports": [port.name], "ports_policy": "UNHEALTHY",
                                                     "action": "isolate"}, method="PUT")
    try:
        assert status == 200 and [u["UnhealthyPort"] for u in doc] == [port.name], doc
        assert doc[0]["UnhealthyNode"] == "gpu003 mlx5_2" and doc[0]["Condition"] == ["MANUAL"]
        now = _port(twin, "gpu003 mlx5_2")
        assert now.logical_state != "Active" and now.disabled
        # an unhealthy port is not brought back behind UFM's back
        with pytest.raises(grpc.RpcError) as e:
            twin.stub.SetPortState(pb.FabricSetPortStateRequest(system=port.name, enabled=True))
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "unhealthy" in (e.value.details() or "")
        alarms = twin.rest("/app/alarms")[1]
        assert {a["name"] for a in alarms} == {"Link is down", "Unhealthy port"}
        assert {"id", "type", "name", "description", "reason", "severity", "timestamp", "event_count",
                "object_name", "object_path"} <= set(alarms[0])
        one = twin.rest(f"/app/alarms/{alarms[0]['id']}")
        assert one == (200, alarms[0])
        a = twin.stub.Analyze(pb.FabricAnalyzeRequest())
        assert [(d.server, d.rails_up, list(d.down)) for d in a.degraded_servers] == [("gpu003", 7, ["gpu003 mlx5_2"])]
        assert len(a.down_links) == 1 and a.down_links[0].source_node == "gpu003 mlx5_2"
        assert any("gpu003 mlx5_2" in u for u in a.balance.unroutable)
    finally:
        status, doc = twin.rest("/app/unhealthy_ports", {"ports": [port.name], "ports_policy": "HEALTHY"},
                                method="PUT")
    assert status == 200 and doc == []
    assert _port(twin, "gpu003 mlx5_2").logical_state == "Active"
    assert twin.rest("/app/alarms") == (200, [])
    assert twin.rest("/app/alarms/999")[0] == 404


def test_unhealthy_bad_input_changes_nothing(twin: FabricUnderTest) -> None:
    good = _port(twin, "gpu001 mlx5_0").name
    cases = [({"ports": [good, "0123456789abcdef_1"], "ports_policy": "UNHEALTHY"}, 404, "no port named"),
             ({"ports": [good], "ports_policy": "SICK"}, 400, "ports_policy"),
             ({"ports": [], "ports_policy": "UNHEALTHY"}, 400, "non-empty"),
             ({"ports": [good], "ports_policy": "UNHEALTHY", "action": "reboot"}, 400, "isolate"),
             ({"ports": [good], "ports_policy": "HEALTHY"}, 400, "not marked unhealthy")]
    for body, code, text in cases:
        status, doc = twin.rest("/app/unhealthy_ports", body, method="PUT")
        assert status == code and text in doc["error"], (body, doc)
    assert twin.rest("/app/unhealthy_ports") == (200, [])
    assert twin.rest("/app/unhealthy_ports", {"ports": [good]})[0] == 405   # POST: it takes GET or PUT
    assert _port(twin, "gpu001 mlx5_0").logical_state == "Active"


def test_collective_estimate_reads_the_live_fabric(twin: FabricUnderTest) -> None:
    healthy = _estimate(twin, ["gpu001", "gpu002"])
    assert healthy.modelled and healthy.algorithm in ("ring", "tree") and healthy.slowest_rails_up == 8
    other = _estimate(twin, ["gpu003", "gpu004"])
    port = _port(twin, "gpu001 mlx5_5").name
    twin.stub.SetPortState(pb.FabricSetPortStateRequest(system=port, enabled=False), timeout=30)
    try:
        hurt = _estimate(twin, ["gpu001", "gpu002"], algorithm=healthy.algorithm)
        assert hurt.slowest_server == "gpu001" and hurt.slowest_rails_up == 7
        assert hurt.time_s > healthy.time_s * 1.1, (hurt.time_s, healthy.time_s)
        # the servers whose routes do not touch the down rail answer exactly as before
        assert _estimate(twin, ["gpu003", "gpu004"]) == other
    finally:
        twin.stub.SetPortState(pb.FabricSetPortStateRequest(system=port, enabled=True), timeout=30)
    assert _estimate(twin, ["gpu001", "gpu002"]) == healthy


def test_collective_estimate_bad_input(twin: FabricUnderTest) -> None:
    cases = [(dict(op="all_gossip", ranks=16, bytes=GIB), grpc.StatusCode.INVALID_ARGUMENT, "unknown op"),
             (dict(op="all_reduce", ranks=16, bytes=GIB, algorithm="magic"), grpc.StatusCode.INVALID_ARGUMENT,
              "unknown algorithm"),
             (dict(op="all_reduce", ranks=64, bytes=GIB), grpc.StatusCode.INVALID_ARGUMENT, "has 4"),
             (dict(op="all_reduce", ranks=16, bytes=GIB, servers=["gpu001", "gpu777"]), grpc.StatusCode.NOT_FOUND,
              "gpu777"),
             (dict(op="all_reduce", ranks=16, bytes=GIB, algorithm="sharp"), grpc.StatusCode.INVALID_ARGUMENT,
              "SHARP")]
    for kw, code, text in cases:
        with pytest.raises(grpc.RpcError) as e:
            twin.stub.EstimateCollective(pb.FabricEstimateCollectiveRequest(**kw))
        assert e.value.code() == code and text in (e.value.details() or ""), (kw, e.value.details())


def test_sharp_trees_follow_the_fabric(twin: FabricUnderTest) -> None:
    servers = ["gpu001", "gpu002", "gpu003", "gpu004"]
    job = twin.stub.CreateSharpJob(pb.FabricCreateSharpJobRequest(job_id="train-1", servers=servers)).job
    try:
        assert job.sharp_available and len(job.trees) == 8
        # rack: rails 0-3 of every server hang off ib-leaf01, 4-7 off ib-leaf02: each tree is rooted on its leaf
        assert {t.rail: t.root for t in job.trees} == {r: "ib-leaf01" if r < 4 else "ib-leaf02" for r in range(8)}
        assert all(len(t.hcas) == 4 and t.state == "ready" for t in job.trees)
        with_sharp = _estimate(twin, servers, algorithm="sharp", sharp_job="train-1")
        ring = _estimate(twin, servers, algorithm="ring")
        assert with_sharp.algorithm == "sharp" and with_sharp.time_s < ring.time_s
        port = _port(twin, "gpu002 mlx5_6").name
        twin.stub.SetPortState(pb.FabricSetPortStateRequest(system=port, enabled=False), timeout=30)
        try:
            now = {j.job_id: j for j in twin.stub.ListSharpJobs(pb.FabricListSharpJobsRequest()).jobs}["train-1"]
            broken = [t for t in now.trees if t.state != "ready"]
            assert not now.sharp_available and [t.rail for t in broken] == [6]
            assert "gpu002 mlx5_6" in broken[0].reason
            kinds = [e["event_type"] for e in twin.rest("/app/events")[1][-3:]]
            assert "sharp_tree_error" in kinds, kinds
            with pytest.raises(grpc.RpcError) as e:
                _estimate(twin, servers, algorithm="sharp", sharp_job="train-1")
            assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "SHARP" in (e.value.details() or "")
        finally:
            twin.stub.SetPortState(pb.FabricSetPortStateRequest(system=port, enabled=True), timeout=30)
        again = {j.job_id: j for j in twin.stub.ListSharpJobs(pb.FabricListSharpJobsRequest()).jobs}["train-1"]
        assert again.sharp_available
    finally:
        released = twin.stub.ReleaseSharpJob(pb.FabricReleaseSharpJobRequest(job_id="train-1")).job
    assert released.job_id == "train-1"
    assert twin.stub.ListSharpJobs(pb.FabricListSharpJobsRequest()).trees_in_use == 0


def test_sharp_limits_and_bad_input(twin: FabricUnderTest) -> None:
    listing = twin.stub.ListSharpJobs(pb.FabricListSharpJobsRequest())
    assert listing.max_trees == 1023 and listing.max_streaming_trees == 511
    created = []
    try:
        # 8 trees a job: the 128th job would need trees 1017..1024 of 1023
        for i in range(127):
            created.append(twin.stub.CreateSharpJob(pb.FabricCreateSharpJobRequest(job_id=f"j{i}",
                                                                                   servers=["gpu001"])).job)
        with pytest.raises(grpc.RpcError) as e:
            twin.stub.CreateSharpJob(pb.FabricCreateSharpJobRequest(job_id="one-too-many", servers=["gpu001"]))
        assert e.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED and "1016 of 1023" in (e.value.details() or "")
        assert twin.stub.ListSharpJobs(pb.FabricListSharpJobsRequest()).trees_in_use == 127 * 8
    finally:
        for job in created:
            twin.stub.ReleaseSharpJob(pb.FabricReleaseSharpJobRequest(job_id=job.job_id))
    twin.stub.CreateSharpJob(pb.FabricCreateSharpJobRequest(job_id="dup", hcas=["gpu001 mlx5_0", "gpu002 mlx5_0"]))
    try:
        cases = [(dict(job_id="dup", servers=["gpu003"]), grpc.StatusCode.ALREADY_EXISTS, "already exists"),
                 (dict(job_id="x", servers=["gpu009"]), grpc.StatusCode.NOT_FOUND, "gpu009"),
                 (dict(job_id="x", hcas=["gpu001 mlx5_9"]), grpc.StatusCode.NOT_FOUND, "mlx5_9"),
                 (dict(job_id="x", hcas=["gpu001 mlx5_0"], servers=["gpu001"]), grpc.StatusCode.INVALID_ARGUMENT,
                  "not both"),
                 (dict(job_id="x"), grpc.StatusCode.INVALID_ARGUMENT, "needs HCAs")]
        for kw, code, text in cases:
            with pytest.raises(grpc.RpcError) as e:
                twin.stub.CreateSharpJob(pb.FabricCreateSharpJobRequest(**kw))
            assert e.value.code() == code and text in (e.value.details() or ""), (kw, e.value.details())
        assert [j.job_id for j in twin.stub.ListSharpJobs(pb.FabricListSharpJobsRequest()).jobs] == ["dup"]
    finally:
        twin.stub.ReleaseSharpJob(pb.FabricReleaseSharpJobRequest(job_id="dup"))
    with pytest.raises(grpc.RpcError) as e:
        twin.stub.ReleaseSharpJob(pb.FabricReleaseSharpJobRequest(job_id="dup"))
    assert e.value.code() == grpc.StatusCode.NOT_FOUND


def test_partition_reaches_the_ports_pkey_tables(twin: FabricUnderTest) -> None:
    a, b, c = (_port(twin, n) for n in ("gpu001 mlx5_0", "gpu002 mlx5_0", "gpu003 mlx5_0"))
    status, doc = twin.rest("/resources/pkeys", {"pkey": "0x0a12", "guids": [a.guid, b.guid],
                                                 "memberships": ["full", "limited"], "ip_over_ib": True})
    try:
        assert status == 200 and doc["partition"] == "api_pkey_0xa12", doc
        assert [(g["guid"], g["membership"]) for g in doc["guids"]] == [(a.guid, "full"), (b.guid, "limited")]
        # read back from the simulated ports by smpquery: the full member carries 0x8a12, the limited 0x0a12
        keys = {n: {(k.pkey, k.full) for k in twin.stub.GetPKeys(pb.FabricGetPKeysRequest(system=n)).pkeys}
                for n in (a.name, b.name, c.name)}
        assert (0xA12, True) in keys[a.name] and (0xA12, False) in keys[b.name]
        assert all(k != 0xA12 for k, _ in keys[c.name]) and (0x7FFF, True) in keys[c.name]
        listed = {p.pkey: p for p in twin.stub.ListPartitions(pb.FabricListPartitionsRequest()).partitions}
        assert listed[0x7FFF].all_ports and [m.node for m in listed[0xA12].members] == ["gpu001 mlx5_0",
                                                                                         "gpu002 mlx5_0"]
        assert twin.rest("/resources/pkeys")[1] == {"0x7fff": {"partition": "Default", "ip_over_ib": True},
                                                    "0xa12": {"partition": "api_pkey_0xa12", "ip_over_ib": True}}
        status, doc = twin.rest("/resources/pkeys/delete", {"pkey": "0xa12", "guids": [b.guid]})
        assert status == 200 and [g["guid"] for g in doc["guids"]] == [a.guid]
        assert all(k.pkey != 0xA12 for k in twin.stub.GetPKeys(pb.FabricGetPKeysRequest(system=b.name)).pkeys)
    finally:
        status, doc = twin.rest("/resources/pkeys/0xa12", method="DELETE")
    assert status == 200
    assert twin.rest("/resources/pkeys/0xa12")[0] == 404
    assert all(k.pkey != 0xA12 for k in twin.stub.GetPKeys(pb.FabricGetPKeysRequest(system=a.name)).pkeys)


def test_partition_bad_input_changes_nothing(twin: FabricUnderTest) -> None:
    a = _port(twin, "gpu001 mlx5_0")
    before = twin.rest("/resources/pkeys?guids_data=true")[1]
    cases = [({"pkey": "0x0b01", "guids": ["0123456789abcdef"]}, 400, "not a port of this fabric"),
             ({"pkey": "0x8001", "guids": [a.guid]}, 400, "0x7fff"),
             ({"pkey": "zz", "guids": [a.guid]}, 400, "hexadecimal"),
             ({"pkey": "0x0b01", "guids": [a.guid], "membership": "owner"}, 400, "membership"),
             ({"pkey": "0x0b01", "guids": "not a list"}, 400, "list of port GUIDs")]
    for body, code, text in cases:
        status, doc = twin.rest("/resources/pkeys", body)
        assert status == code and text in doc["error"], (body, doc)
    assert twin.rest("/resources/pkeys/0x7fff", method="DELETE")[0] == 400
    assert twin.rest("/resources/pkeys/0x0b02", method="DELETE")[0] == 404
    assert twin.rest("/resources/pkeys", b"{not json")[0] == 400
    with pytest.raises(grpc.RpcError) as e:
        twin.stub.SetPartition(pb.FabricSetPartitionRequest(partition=pb.FabricPartition(
            pkey=0x0B01, members=[pb.FabricPartitionMember(guid="00000000000000ff", membership="full")])))
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "not a port of this fabric" in (e.value.details() or "")
    assert twin.rest("/resources/pkeys?guids_data=true")[1] == before


def test_error_counters_show_in_perfquery_and_alarms(twin: FabricUnderTest) -> None:
    port = _port(twin, "gpu004 mlx5_2")
    clean = twin.stub.GetPortCounters(pb.FabricGetPortCountersRequest(system=port.name))
    assert clean.port_name == port.name and clean.counters["SymbolErrorCounter"] == 0
    assert {"LinkDownedCounter", "PortRcvErrors", "PortXmitData", "PortRcvPkts"} <= set(clean.counters)
    bad = twin.stub.SetPortCounter(pb.FabricSetPortCounterRequest(system=port.name, counter="SymbolErrorCounter",
                                                                  value=1234))
    try:
        assert bad.counters["SymbolErrorCounter"] == 1234
        (alarm,) = twin.stub.ListAlarms(pb.FabricListAlarmsRequest()).alarms
        assert alarm.name == "Link HW Error" and alarm.description == "SymbolErrorCounter"
        with pytest.raises(grpc.RpcError) as e:
            twin.stub.SetPortCounter(pb.FabricSetPortCounterRequest(system=port.name, counter="SymbolErrorCounter",
                                                                    value=1 << 20))
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        with pytest.raises(grpc.RpcError) as e:
            twin.stub.SetPortCounter(pb.FabricSetPortCounterRequest(system=port.name, counter="CoffeeSpilled", value=1))
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    finally:
        twin.stub.SetPortCounter(pb.FabricSetPortCounterRequest(system=port.name, counter="SymbolErrorCounter",
                                                                value=0))
    assert not twin.stub.ListAlarms(pb.FabricListAlarmsRequest()).alarms


def test_the_cable_of_the_diags_own_hca_can_go_down(twin: FabricUnderTest) -> None:
    """The diags attach to gpu001 mlx5_0 first; with its cable down they move to another HCA, and
    a whole leaf's server ports going down leaves the fabric readable."""
    victims = [_port(twin, f"gpu00{s} mlx5_0").name for s in (1, 2, 3, 4)]
    try:
        for name in victims:
            r = twin.stub.SetPortState(pb.FabricSetPortStateRequest(system=name, enabled=False), timeout=30)
            assert r.changed and r.port.logical_state != "Active"
        h = twin.stub.GetHealth(pb.FabricGetHealthRequest())
        assert h.ports_active == h.ports_total - 8 and h.sm_state == "MASTER"
        route = twin.stub.GetRoute(pb.FabricGetRouteRequest(src=pb.FabricEndpoint(node="gpu001 mlx5_1"),
                                                            dst=pb.FabricEndpoint(node="gpu004 mlx5_7")))
        assert [hop.switch_name for hop in route.hops][0] == "ib-leaf01"
    finally:
        for name in victims:
            twin.stub.SetPortState(pb.FabricSetPortStateRequest(system=name, enabled=True), timeout=30)
    assert twin.stub.GetHealth(pb.FabricGetHealthRequest()).ports_active == 128
