"""The fabric-manager daemon end to end: `python -m services.fabric.daemon` over the rack fabric
(real ibsim + OpenSM), its gRPC API, its UFM-shaped REST API, events on WatchEvents and on a
throwaway Mosquitto, and a clean stop (no ibsim or OpenSM left). The daemon is the `twin` fixture
of conftest.py."""

from __future__ import annotations

import base64
import queue
import threading

import grpc
import pytest

from clustertwin.v1 import fabric_pb2 as pb
from tests.fabric.conftest import REASON, TWIN, FabricUnderTest

pytestmark = pytest.mark.skipif(bool(REASON), reason=REASON or "n/a")

Twin = FabricUnderTest


def _hops(route: pb.FabricGetRouteResponse) -> list[str]:
    return [h.switch_name for h in route.hops]


def test_every_hca_active_with_a_lid(twin: Twin) -> None:
    assert len(twin.subnet_pids) == 2  # ibsim and OpenSM
    ports = twin.stub.ListPorts(pb.FabricListPortsRequest(computer_only=True)).ports
    assert len(ports) == 32
    assert all(p.logical_state == "Active" and p.lid > 0 and p.active_width == "4X" for p in ports)
    assert len({p.lid for p in ports}) == 32
    gpu1 = twin.stub.ListPorts(pb.FabricListPortsRequest(system="gpu001")).ports
    assert sorted(p.node for p in gpu1) == [f"gpu001 mlx5_{r}" for r in range(8)]
    assert {p.peer_node for p in gpu1} == {"ib-leaf01", "ib-leaf02"}
    leaf = twin.stub.ListPorts(pb.FabricListPortsRequest(system="ib-leaf01")).ports
    assert len(leaf) == 32 and sum(p.computer for p in leaf) == 0
    systems = twin.stub.ListSystems(pb.FabricListSystemsRequest()).systems
    assert sorted(s.name for s in systems if s.type == "switch") == ["ib-leaf01", "ib-leaf02", "ib-spine01",
                                                                     "ib-spine02"]
    hosts = [s for s in systems if s.type == "host"]
    assert len(hosts) == 4 and all(len(h.ports) == 8 for h in hosts)
    links = twin.stub.ListLinks(pb.FabricListLinksRequest()).links
    assert len(links) == 32 + 32 and all(lk.active and lk.speed == "4xHDR" for lk in links)
    h = twin.stub.GetHealth(pb.FabricGetHealthRequest())
    assert h.sm_state == "MASTER" and h.routing_engine == "ftree" and h.sweeps >= 1
    assert h.ports_total == h.ports_active == 128 and not h.down_ports


def test_route_between_servers_crosses_a_spine(twin: Twin) -> None:
    src = pb.FabricEndpoint(node="gpu001 mlx5_0")
    route = twin.stub.GetRoute(pb.FabricGetRouteRequest(src=src, dst=pb.FabricEndpoint(server="gpu003", rail=4)))
    names = _hops(route)
    assert names[0] == "ib-leaf01" and names[-1] == "ib-leaf02" and names[1].startswith("ib-spine"), names
    by_lid = twin.stub.GetRoute(pb.FabricGetRouteRequest(src=pb.FabricEndpoint(lid=route.src_lid),
                                                         dst=pb.FabricEndpoint(lid=route.dst_lid)))
    assert by_lid == route
    same_leaf = twin.stub.GetRoute(pb.FabricGetRouteRequest(src=src, dst=pb.FabricEndpoint(node="gpu002-mlx5_0")))
    assert _hops(same_leaf) == ["ib-leaf01"]
    a = twin.stub.Analyze(pb.FabricAnalyzeRequest(pattern="all_to_all"))
    assert a.non_blocking and [c.leaf for c in a.leaves] == ["ib-leaf01", "ib-leaf02"]
    assert a.balance.routed == a.balance.flows == 32 * 31 and a.balance.balanced
    ring = twin.stub.Analyze(pb.FabricAnalyzeRequest())
    assert ring.balance.pattern == "ring" and ring.balance.routed == 32 and ring.balance.busiest == 0


def test_unknown_system_or_port_is_not_found_and_changes_nothing(twin: Twin) -> None:
    cases = [("ib-leaf99", 1, "no system 'ib-leaf99'"), ("ib-leaf01", 40, "port 40 has no cable"),
             ("gpu001", 1, "is a host with 8 HCAs"), ("0123456789abcdef_1", 0, "no port named")]
    for system, port, msg in cases:
        with pytest.raises(grpc.RpcError) as e:
            twin.stub.SetPortState(pb.FabricSetPortStateRequest(system=system, port=port, enabled=False))
        assert e.value.code() == grpc.StatusCode.NOT_FOUND and msg in (e.value.details() or ""), e.value
    with pytest.raises(grpc.RpcError) as e:
        twin.stub.GetRoute(pb.FabricGetRouteRequest(src=pb.FabricEndpoint(node="gpu009 mlx5_0"),
                                                    dst=pb.FabricEndpoint(lid=1)))
    assert e.value.code() == grpc.StatusCode.NOT_FOUND and "src: no system" in (e.value.details() or "")
    with pytest.raises(grpc.RpcError) as e:
        twin.stub.ListPorts(pb.FabricListPortsRequest(system="nope"))
    assert e.value.code() == grpc.StatusCode.NOT_FOUND
    h = twin.stub.GetHealth(pb.FabricGetHealthRequest())
    assert h.ports_active == h.ports_total and not twin.stub.ListPorts(pb.FabricListPortsRequest()).ports[0].disabled


def test_disable_uplink_reroutes_with_events(twin: Twin) -> None:
    events: queue.Queue[pb.FabricEvent] = queue.Queue()
    stream = twin.stub.WatchEvents(pb.FabricWatchEventsRequest(since_seq=10**9))

    def follow() -> None:
        try:
            for ev in stream:
                events.put(ev.event)
        except grpc.RpcError:
            pass   # cancelled at the end of the test
    threading.Thread(target=follow, daemon=True).start()
    req = pb.FabricGetRouteRequest(src=pb.FabricEndpoint(node="gpu001 mlx5_0"),
                                   dst=pb.FabricEndpoint(node="gpu003 mlx5_4"))
    before = twin.stub.GetRoute(req)
    uplink = before.hops[0].out_port
    try:
        r = twin.stub.SetPortState(pb.FabricSetPortStateRequest(system="ib-leaf01", port=uplink, enabled=False),
                                   timeout=30)
        assert r.changed and r.trap_128 and r.port.disabled and r.port.logical_state != "Active"
        ev = events.get(timeout=10)
        assert ev.kind == "port_down" and ev.node == "ib-leaf01" and ev.port == uplink and ev.trap_128
        msg = twin.mqtt.get(timeout=10)
        assert msg["_topic"] == f"clustertwin/{TWIN}/events/fabric/port_down" and msg["port"] == uplink
        after = twin.stub.GetRoute(req)
        assert after.hops[0].out_port != uplink and _hops(after)[1].startswith("ib-spine")
        h = twin.stub.GetHealth(pb.FabricGetHealthRequest())
        assert {(p.node, p.number) for p in h.down_ports} >= {("ib-leaf01", uplink)} and len(h.down_ports) == 2
        caps = {c.leaf: c for c in twin.stub.Analyze(pb.FabricAnalyzeRequest()).leaves}
        assert caps["ib-leaf01"].up_ports == 15 and not caps["ib-leaf01"].non_blocking
        again = twin.stub.SetPortState(pb.FabricSetPortStateRequest(system="ib-leaf01", port=uplink, enabled=False))
        assert not again.changed
    finally:
        back = twin.stub.SetPortState(pb.FabricSetPortStateRequest(system="ib-leaf01", port=uplink, enabled=True),
                                      timeout=30)
    assert back.changed and back.port.logical_state == "Active"
    assert events.get(timeout=10).kind == "port_up"
    assert twin.stub.GetHealth(pb.FabricGetHealthRequest()).ports_active == 128
    stream.cancel()


def test_ufm_rest_shapes_and_filters(twin: Twin) -> None:
    status, systems = twin.rest("/resources/systems")
    assert status == 200 and len(systems) == 8
    leaf = next(s for s in systems if s["system_name"] == "ib-leaf01")
    assert {"system_name", "guid", "type", "model", "vendor", "ports"} <= set(leaf)
    assert leaf["type"] == "switch" and leaf["model"] == "MQM9700" and len(leaf["ports"]) == 32
    status, ports = twin.rest("/resources/ports?sys_type=Computer")
    assert status == 200 and len(ports) == 32
    p = next(p for p in ports if p["node_description"] == "gpu001 mlx5_0")
    assert p["system_name"] == "gpu001" and p["peer_node_name"] == "ib-leaf01" and "Computer" in p["description"]
    assert p["logical_state"] == "Active" and p["physical_state"] == "LinkUp" and p["lid"] > 0
    assert p["active_width"] == "4X" and p["active_speed"] == "HDR" and p["tier"] == 1
    assert p["name"] == f"{p['guid']}_1" and p["peer_guid"] and p["peer_lid"] > 0
    status, one = twin.rest("/resources/ports?system=gpu002")
    assert status == 200 and {q["system_name"] for q in one} == {"gpu002"} and len(one) == 8
    host_guid = next(s["guid"] for s in systems if s["system_name"] == "gpu002")
    assert twin.rest(f"/resources/ports?system={host_guid}")[1] == one
    status, switch_ports = twin.rest("/resources/ports?sys_type=Switch")
    assert status == 200 and len(switch_ports) == 96
    status, links = twin.rest("/resources/links")
    assert status == 200 and len(links) == 64
    assert {"source_guid", "source_port", "destination_guid", "destination_port", "width"} <= set(links[0])
    # the REST view agrees with the gRPC one
    grpc_ports = {q.name: q for q in twin.stub.ListPorts(pb.FabricListPortsRequest(computer_only=True)).ports}
    assert {q["name"]: q["lid"] for q in ports} == {n: q.lid for n, q in grpc_ports.items()}


def test_ufm_rest_auth_and_bad_requests(twin: Twin) -> None:
    assert twin.rest("/resources/ports", auth=None)[0] == 401
    assert twin.rest("/resources/ports", auth="Basic " + base64.b64encode(b"admin:wrong").decode())[0] == 401
    status, doc = twin.rest("/actions", {"action": "reboot_everything", "params": {"port_id": "x"}})
    assert status == 400 and "not supported" in doc["error"]
    status, doc = twin.rest("/actions", b"{not json")
    assert status == 400 and "not JSON" in doc["error"]
    status, doc = twin.rest("/actions", {"action": "port_disable", "params": {}})
    assert status == 400 and "port_id" in doc["error"]
    status, doc = twin.rest("/actions", {"action": "port_disable", "params": {"port_id": "0123456789abcdef_1"}})
    assert status == 404 and "no port named" in doc["error"]
    assert twin.rest("/resources/nothing")[0] == 404
    assert twin.rest("/resources/ports?sys_type=Router")[0] == 400


def test_ufm_rest_port_action_and_events(twin: Twin) -> None:
    _, ports = twin.rest("/resources/ports?system=gpu004")
    port = next(p for p in ports if p["node_description"] == "gpu004 mlx5_7")
    body = {"action": "disable", "params": {"port_id": port["name"]}, "object_ids": [port["systemID"]],
            "object_type": "System", "identifier": "id", "description": "test"}
    status, doc = twin.rest("/actions", body)
    try:
        assert status == 202 and doc["changed"] and doc["port"]["logical_state"] != "Active", doc
        down = twin.stub.ListPorts(pb.FabricListPortsRequest(system="gpu004 mlx5_7")).ports[0]
        assert down.disabled and down.logical_state != "Active"
        _, events = twin.rest("/app/events")
        assert events[-1]["object_name"] == port["name"] and events[-1]["severity"] == "Warning"
    finally:
        status, doc = twin.rest("/actions", {**body, "action": "port_enable"})
    assert status == 202 and doc["port"]["logical_state"] == "Active"
    _, events = twin.rest("/app/events")
    assert [e["event_type"] for e in events[-2:]] == ["port_down", "port_up"]
    assert {"id", "name", "severity", "timestamp", "description", "object_name"} <= set(events[-1])



def test_status_codes_come_from_the_error_not_its_message(twin: Twin) -> None:
    """A message that happens to contain "no route" or "no resources" keeps its own status (the
    servicer once picked FAILED_PRECONDITION / RESOURCE_EXHAUSTED by searching the text)."""
    with pytest.raises(grpc.RpcError) as e:
        twin.stub.ListSystems(pb.FabricListSystemsRequest(type="no route"))
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT, e.value
    twin.stub.CreateSharpJob(pb.FabricCreateSharpJobRequest(job_id="no resources", servers=["gpu001"]))
    try:
        with pytest.raises(grpc.RpcError) as e:
            twin.stub.CreateSharpJob(pb.FabricCreateSharpJobRequest(job_id="no resources", servers=["gpu001"]))
        assert e.value.code() == grpc.StatusCode.ALREADY_EXISTS, e.value
        assert (e.value.details() or "").startswith("SHARP: SHARP job 'no resources' already exists")
    finally:
        twin.stub.ReleaseSharpJob(pb.FabricReleaseSharpJobRequest(job_id="no resources"))


def test_rest_maps_the_same_errors_to_http(twin: Twin) -> None:
    """The fabric's refusals reach UFM REST with the HTTP status of their code (errors.HTTP_STATUS)."""
    assert twin.rest("/resources/pkeys/add", {"pkey": "0x31"}) == (200, {"partition": "api_pkey_0x31",
                                                                         "ip_over_ib": True, "guids": []})
    try:
        status, doc = twin.rest("/resources/pkeys/add", {"pkey": "0x31"})
        assert (status, doc) == (409, {"error": "pkey 0x31 already exists"})
    finally:
        assert twin.rest("/resources/pkeys/0x31", method="DELETE")[0] == 200
    assert twin.rest("/resources/pkeys/0x31") == (404, {"error": "no partition with PKey 0x0031"})
    assert twin.rest("/resources/pkeys/add", {"pkey": 7})[0] == 400


def test_lists_are_paginated_and_the_sdk_joins_the_pages(twin: Twin) -> None:
    """Every List RPC pages (page_size, page_token, next_page_token); a token of another RPC, a
    made-up one or a negative page_size is INVALID_ARGUMENT; FabricClient.call joins the pages."""
    from services.fabric.sdk import FabricClient

    assert len(twin.stub.ListPorts(pb.FabricListPortsRequest()).ports) == 100   # the default page size
    everything = list(twin.stub.ListPorts(pb.FabricListPortsRequest(page_size=1000)).ports)
    assert len(everything) == 128   # cabled ports: 32 HCAs, 2 leaves x 32, 2 spines x 16
    pages, token = [], ""
    while True:
        r = twin.stub.ListPorts(pb.FabricListPortsRequest(page_size=50, page_token=token))
        pages.append([p.name for p in r.ports])
        if not (token := r.next_page_token):
            break
    assert [len(p) for p in pages] == [50, 50, 28]
    assert sum(pages, []) == [p.name for p in everything]
    first = twin.stub.ListPorts(pb.FabricListPortsRequest(page_size=1))
    for bad in (pb.FabricListLinksRequest(page_token=first.next_page_token),   # ListPorts' token
                pb.FabricListLinksRequest(page_token="not-a-token"), pb.FabricListLinksRequest(page_size=-1)):
        with pytest.raises(grpc.RpcError) as e:
            twin.stub.ListLinks(bad)
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT, bad
        assert "ListLinks" in (e.value.details() or "")
    with FabricClient(twin.grpc_addr) as client:
        joined = client.call("ListPorts", page_size=7)   # 19 pages, one reply
        assert [p.name for p in joined.ports] == [p.name for p in everything] and not joined.next_page_token
        one = client.call("ListPorts", page_size=7, page_token="")
        assert len(one.ports) == 7 and one.next_page_token
