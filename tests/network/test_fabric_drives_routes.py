"""One fabric, every view: OpenSM's forwarding tables are the compute plane's routes, and one
leaf-spine port failure, injected through the fabric manager, is seen alike by the fabric (port
Down, new LFT), the namespace network (veth down, routes moved), real packets and the bus."""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
import time
from pathlib import Path

import grpc
import pytest

from clustertwin.v1 import fabric_pb2 as pb
from clustertwin.v1 import fabric_pb2_grpc as pb_grpc
from emulator.client import Twin
from emulator.network import Network
from emulator.network.plan import make_network_plan
from emulator.network.remote import decode_routes, encode_routes
from emulator.network.routing import Nexthop, Route, as_route
from emulator.topology import load_topology
from services.fabric.lft_routes import ComputeMap, uses
from services.fabric.netfile import make_fabric_plan
from services.fabric.subnet import Subnet
from tests.fabric.conftest import REASON as FABRIC_REASON

needs_subnet = pytest.mark.skipif(bool(FABRIC_REASON), reason=FABRIC_REASON or "n/a")


@pytest.fixture(scope="module")
def rack_map() -> ComputeMap:
    topo = load_topology("rack")
    return ComputeMap(make_fabric_plan(topo), make_network_plan(topo, "ct0"))


# --- the pure mapping ---------------------------------------------------------------------------


def test_every_cabled_port_is_a_veth_of_the_same_cable(rack_map: ComputeMap) -> None:
    fabric, net = rack_map.fabric, rack_map.net
    assert len(rack_map.ends) == 2 * len(fabric.cables)
    for cable in fabric.cables:
        a, b = rack_map.ends[(cable.a, cable.a_port)], rack_map.ends[(cable.b, cable.b_port)]
        assert a.link == b.link
        (wire,) = [w for w in net.wires if {(w.a.ns, w.a.ifname), (w.b.ns, w.b.ifname)}
                   == {(a.ns, a.ifname), (b.ns, b.ifname)}]
        assert wire.plane == "compute"
    # HCA rail r of a server is its `rail<r>` veth; the i-th leaf-spine cable is link index i.
    hca = fabric.hca("gpu003", 5)
    end = rack_map.ends[(hca.id, 1)]
    assert (end.ns, end.ifname) == ("gpu003", "rail5")
    cables = sorted(fabric.cables_between("ib-leaf02", "ib-spine01"), key=lambda c: c.a_port)
    assert rack_map.link_args("ib-leaf02", cables[3].a_port) == ("ib-leaf02", "ib-spine01", 3)
    assert rack_map.link_args("ib-spine01", cables[3].b_port) == ("ib-leaf02", "ib-spine01", 3)
    assert rack_map.ends[("ib-leaf02", cables[3].a_port)].ifname == "ib-spine01-3"
    assert sorted(rack_map.namespaces_of("ib-leaf02", cables[3].a_port)) == ["ib-leaf02", "ib-spine01"]
    with pytest.raises(KeyError, match="no cable"):
        rack_map.link_args("ib-leaf01", 40)   # an uncabled down port


def test_routes_cross_the_control_socket_unchanged() -> None:
    routes = [Route("10.100.0.1/32", (Nexthop("gpu001-0"),)),
              Route("10.100.255.2/32", (Nexthop("ib-spine01-0", "10.100.255.3"),))]
    many = routes + [Route(f"10.100.16.{i}/32", (Nexthop(f"gpu00{i}-1"),)) for i in range(1, 5)]
    wire = encode_routes({"ib-leaf01": many})
    assert [as_route(tuple(r)) for r in wire["ib-leaf01"]] == many
    (decoded,) = decode_routes(json.loads(json.dumps(wire)))
    assert decoded == {"ib-leaf01": many}


# --- against the real subnet manager ------------------------------------------------------------


@needs_subnet
def test_lfts_become_routes_and_a_port_failure_moves_them(rack_map: ComputeMap) -> None:
    fabric, net = rack_map.fabric, rack_map.net
    with tempfile.TemporaryDirectory() as tmp:
        subnet = Subnet(fabric, Path(tmp))
        subnet.start(timeout=30)
        try:
            state = subnet.snapshot()
            tables = rack_map.routes(state)
            assert set(tables) == {"ib-leaf01", "ib-leaf02", "ib-spine01", "ib-spine02"}
            rails = {f"{a}/32" for h in net.hosts.values() for a in h.rails}
            rids = {f"{net.namespaces[s].router_id}/32" for s in tables}
            for label, routes in tables.items():
                prefixes = {r.prefix for r in routes}
                assert rails <= prefixes, label   # every rail of every server, from every switch
                assert all(len(r.nexthops) == 1 for r in routes)   # an LFT names one port
                own = f"{net.namespaces[label].router_id}/32"
                assert own not in prefixes
                if label.startswith("ib-leaf"):
                    assert prefixes - rails == rids - {own}
            # Every route is the LFT's port: same answer as following the LFT in the model.
            leaf = fabric.nodes["ib-leaf01"]
            owners = state.lid_owner()
            dst = fabric.hca("gpu004", 4)
            lid = state.lid_of(dst.description)
            prefix = f"{net.hosts['gpu004'].rails[4]}/32"
            port = state.lfts[leaf.guid][lid]
            (route,) = [r for r in tables["ib-leaf01"] if r.prefix == prefix]
            end = rack_map.ends[("ib-leaf01", port)]
            peer = fabric.peer("ib-leaf01", port)
            assert peer is not None
            assert route.nexthops == (Nexthop(end.ifname, net.namespaces[peer[0]].router_id),)
            hop = state.route(state.lid_of(fabric.hca("gpu001", 0).description), lid, owners).hops[0]
            assert hop.out_port == port

            # Fail that cable in ibsim: OpenSM re-routes, and no route uses its veth any more.
            subnet.link_down("ib-leaf01", port)
            after = rack_map.routes(subnet.snapshot())
            assert uses(after["ib-leaf01"], end.ifname) == []
            spine_end = rack_map.ends[peer]
            assert uses(after[peer[0]], spine_end.ifname) == []
            assert {r.prefix for r in after["ib-leaf01"]} == {r.prefix for r in tables["ib-leaf01"]}
            subnet.link_up("ib-leaf01", port)
            restored = rack_map.routes(subnet.snapshot())
            assert {r.prefix for r in restored["ib-leaf01"]} == {r.prefix for r in tables["ib-leaf01"]}
        finally:
            subnet.stop()


# --- end to end, in a twin ----------------------------------------------------------------------


def kernel_routes(net: Network, label: str) -> dict[str, str]:
    """prefix -> out device, as the kernel has them in a router namespace."""
    out = kernel_exec(net, label, ["ip", "-4", "route", "show"])
    routes = {}
    for line in out.splitlines():
        m = re.match(r"^(\S+) .*\bdev (\S+)", line)
        if m:
            prefix = m.group(1) if "/" in m.group(1) else f"{m.group(1)}/32"
            routes[prefix] = m.group(2)
    return routes


def kernel_exec(net: Network, label: str, argv: list[str]) -> str:
    done = net.exec(label, argv, timeout=15)
    assert done.returncode == 0, f"{argv} in {label}: {done.stderr}"
    return str(done.stdout)


def ping(net: Network, label: str, src: str, dst: str) -> bool:
    done = net.exec(label, ["ping", "-c", "1", "-W", "2", "-I", src, dst], timeout=15)
    return done.returncode == 0


def wait_until(check, timeout: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"not true within {timeout:.0f} s: {check.__doc__ or check}")
        time.sleep(0.1)


@needs_subnet
def test_one_port_failure_through_every_view(tmp_path: Path, rack_map: ComputeMap, twin_exe: str) -> None:
    fabric = rack_map.fabric
    with Twin.up("rack", run_dir=tmp_path / "t", network="netns", fabric=True, timeout=90) as twin:
        net = Network.attach(twin.run.network)
        (entry,) = twin.daemons("fabric")
        rails = {h: net.rail_addresses(h) for h in ("gpu001", "gpu004")}
        leaf01, leaf02 = (net.plan.namespaces[n].router_id for n in ("ib-leaf01", "ib-leaf02"))
        target = f"{rails['gpu004'][4]}/32"   # on ib-leaf02: from ib-leaf01, over a spine
        with grpc.insecure_channel(entry.grpc) as channel, twin.events("events/fabric/#") as events:
            stub = pb_grpc.FabricStub(channel)

            def leaf01_port_to_target() -> int:
                r = stub.GetRoute(pb.FabricGetRouteRequest(src=pb.FabricEndpoint(server="gpu001", rail=0),
                                                           dst=pb.FabricEndpoint(server="gpu004", rail=4)), timeout=10)
                assert r.hops[0].switch_name == "ib-leaf01"
                return r.hops[0].out_port

            # The compute plane runs on OpenSM's routes from the start: one nexthop per /32, the
            # LFT's port (shortest-path routing would have used an ECMP group over all 16 uplinks).
            port = leaf01_port_to_target()
            ifname = rack_map.ends[("ib-leaf01", port)].ifname
            spine, spine_port = fabric.peer("ib-leaf01", port) or ("", 0)
            spine_if = rack_map.ends[(spine, spine_port)].ifname
            wait_until(lambda: kernel_routes(net, "ib-leaf01").get(target) == ifname)
            assert "group" not in kernel_exec(net, "ib-leaf01", ["ip", "nexthop", "show"])
            assert ping(net, "gpu001", rails["gpu001"][0], rails["gpu004"][0])
            assert ping(net, "ib-leaf01", leaf01 or "", leaf02 or "")   # leaf to leaf, over a spine

            # Disable that leaf port through the fabric manager.
            reply = stub.SetPortState(pb.FabricSetPortStateRequest(system="ib-leaf01", port=port, enabled=False),
                                      timeout=60)   # its time (target 20 s) is in the bench
            assert reply.changed and reply.port.logical_state != "Active"
            ports = {p.number: p for p in stub.ListPorts(pb.FabricListPortsRequest(system="ib-leaf01"),
                                                         timeout=10).ports}
            assert ports[port].logical_state == "Down"
            new_port = leaf01_port_to_target()
            assert new_port != port   # OpenSM's new LFT avoids the failed port
            new_if = rack_map.ends[("ib-leaf01", new_port)].ifname
            # ... the veth is down in the namespace network too, and the kernel follows the new LFT.
            assert "state DOWN" in kernel_exec(net, "ib-leaf01", ["ip", "link", "show", "dev", ifname])
            leaf_routes = kernel_routes(net, "ib-leaf01")
            assert leaf_routes.get(target) == new_if
            assert ifname not in leaf_routes.values()
            assert spine_if not in kernel_routes(net, spine).values()
            assert len(leaf_routes) >= 32 + 3
            # ... packets still get through, and the event went out on the bus.
            assert ping(net, "gpu001", rails["gpu001"][0], rails["gpu004"][0])
            assert ping(net, "ib-leaf01", leaf01 or "", leaf02 or "")
            ev = events.wait_for(lambda e: e.get("kind") == "port_down", timeout=10)
            assert ev["node"] == "ib-leaf01" and ev["port"] == port

            # Re-enable: the port is Active again, the veth up, routes follow the LFT again.
            reply = stub.SetPortState(pb.FabricSetPortStateRequest(system="ib-leaf01", port=port, enabled=True),
                                      timeout=60)
            assert reply.changed and reply.port.logical_state == "Active"
            assert "state UP" in kernel_exec(net, "ib-leaf01", ["ip", "link", "show", "dev", ifname])
            restored_port = leaf01_port_to_target()
            restored_if = rack_map.ends[("ib-leaf01", restored_port)].ifname
            assert kernel_routes(net, "ib-leaf01").get(target) == restored_if
            assert ping(net, "ib-leaf01", leaf01 or "", leaf02 or "")
            assert ping(net, "gpu001", rails["gpu001"][0], rails["gpu004"][0])
            ev = events.wait_for(lambda e: e.get("kind") == "port_up", timeout=10)
            assert ev["port"] == port

            _net_fault_cuts_a_cable(twin, net, stub, events, rack_map, spine, twin_exe)


def _net_fault_cuts_a_cable(twin: Twin, net: Network, stub: pb_grpc.FabricStub, events, rack_map: ComputeMap,
                            spine: str, twin_exe: str) -> None:
    """`twin net fault link-down` on a compute cable goes through the fabric too: the cable is cut in
    ibsim, OpenSM re-routes, the veth and the kernel routes follow."""
    fabric = rack_map.fabric
    rails = {h: net.rail_addresses(h) for h in ("gpu001", "gpu004")}
    cli = [twin_exe, "net", "fault", "link-down", "ib-leaf01", spine, "--index", "0",
           "--run-dir", str(twin.run.path)]
    cut = subprocess.run(cli, capture_output=True, text=True, timeout=60)
    assert cut.returncode == 0 and "re-swept" in cut.stdout, cut.stdout + cut.stderr
    cable0 = sorted(fabric.cables_between("ib-leaf01", spine), key=lambda c: c.a_port)[0].a_port
    ports = {p.number: p for p in stub.ListPorts(pb.FabricListPortsRequest(system="ib-leaf01"),
                                                 timeout=10).ports}
    assert ports[cable0].logical_state == "Down" and ports[cable0].disabled
    if0 = rack_map.ends[("ib-leaf01", cable0)].ifname
    assert "state DOWN" in kernel_exec(net, "ib-leaf01", ["ip", "link", "show", "dev", if0])
    assert if0 not in kernel_routes(net, "ib-leaf01").values()
    assert events.wait_for(lambda e: e.get("kind") == "port_down", timeout=10)["port"] == cable0
    back = subprocess.run([*cli[:3], "link-up", *cli[4:]], capture_output=True, text=True, timeout=60)
    assert back.returncode == 0 and "is Active" in back.stdout, back.stdout + back.stderr
    assert "state UP" in kernel_exec(net, "ib-leaf01", ["ip", "link", "show", "dev", if0])
    assert ping(net, "gpu001", rails["gpu001"][0], rails["gpu004"][0])
