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
    (port,) = twin.stub.ListPorts(pb.ListPortsRequest(system=node)).ports
    return port


def _estimate(twin: FabricUnderTest, servers: list[str], **kw: object) -> pb.CollectiveEstimate:
    req = pb.EstimateCollectiveRequest(op="all_reduce", ranks=8 * len(servers), bytes=GIB, servers=servers, **kw)
    return twin.stub.EstimateCollective(req)


def test_port_reset_goes_down_and_up(twin: FabricUnderTest) -> None:
    port = _port(twin, "gpu002 mlx5_1")
    before = len(twin.rest("/app/events")[1])
    status, doc = twin.rest("/actions", {"action": "port_reset", "params": {"port_id": port.name}})
    assert status == 202 and doc["port"]["logical_state"] == "Active", doc
    kinds = [e["event_type"] for e in twin.rest("/app/events")[1][before:]]
    assert kinds == ["port_down", "port_up"]
    assert not twin.stub.ListAlarms(pb.ListAlarmsRequest()).alarms
    # a disabled port is not reset: it is enabled
    twin.stub.SetPortState(pb.SetPortStateRequest(system=port.name, enabled=False), timeout=30)
    try:
        with pytest.raises(grpc.RpcError) as e:
            twin.stub.ResetPort(pb.ResetPortRequest(system=port.name))
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "enable it" in (e.value.details() or "")
        (alarm,) = twin.stub.ListAlarms(pb.ListAlarmsRequest()).alarms
        assert alarm.name == "Link is down" and alarm.object_name == port.name
        assert alarm.object_path == "Computer: gpu002 / mlx5_1" and alarm.severity == "Critical"
    finally:
        twin.stub.SetPortState(pb.SetPortStateRequest(system=port.name, enabled=True), timeout=30)
    assert not twin.stub.ListAlarms(pb.ListAlarmsRequest()).alarms


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
            twin.stub.SetPortState(pb.SetPortStateRequest(system=port.name, enabled=True))
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "unhealthy" in (e.value.details() or "")
        alarms = twin.rest("/app/alarms")[1]
        assert {a["name"] for a in alarms} == {"Link is down", "Unhealthy port"}
        assert {"id", "type", "name", "description", "reason", "severity", "timestamp", "event_count",
                "object_name", "object_path"} <= set(alarms[0])
        one = twin.rest(f"/app/alarms/{alarms[0]['id']}")
        assert one == (200, alarms[0])
        a = twin.stub.Analyze(pb.AnalyzeRequest())
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
    twin.stub.SetPortState(pb.SetPortStateRequest(system=port, enabled=False), timeout=30)
    try:
        hurt = _estimate(twin, ["gpu001", "gpu002"], algorithm=healthy.algorithm)
        assert hurt.slowest_server == "gpu001" and hurt.slowest_rails_up == 7
        assert hurt.time_s > healthy.time_s * 1.1, (hurt.time_s, healthy.time_s)
        # the servers whose routes do not touch the down rail answer exactly as before
        assert _estimate(twin, ["gpu003", "gpu004"]) == other
    finally:
        twin.stub.SetPortState(pb.SetPortStateRequest(system=port, enabled=True), timeout=30)
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
            twin.stub.EstimateCollective(pb.EstimateCollectiveRequest(**kw))
        assert e.value.code() == code and text in (e.value.details() or ""), (kw, e.value.details())
