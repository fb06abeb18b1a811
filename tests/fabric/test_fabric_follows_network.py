"""One fabric, every view, the other way round: on a `--fabric --network netns` twin, the network's own
faults that take compute-plane veths down (an IB switch powered off, a host cut off) reach the fabric
manager too: the ports go Down in ibsim, OpenSM routes around them, its routes become the plane's,
and a port_down event names the network fault; clearing the fault brings them back. (Run under
`flock /tmp/clustertwin-netns.lock`: one netns twin at a time.)"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import grpc
import pytest

from clustertwin.v1 import fabric_pb2 as pb
from clustertwin.v1 import fabric_pb2_grpc as pb_grpc
from emulator.client import Twin
from emulator.network import Network
from tests.fabric.conftest import REASON
from tests.network.test_fabric_drives_routes import ping

pytestmark = pytest.mark.skipif(bool(REASON), reason=REASON or "n/a")

FOLLOW_TIMEOUT_S = 60.0   # a bound on a hang, not a performance threshold


def wait_until(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + FOLLOW_TIMEOUT_S
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"not within {FOLLOW_TIMEOUT_S:.0f} s: {what}")
        time.sleep(0.2)


def test_switch_down_and_host_cut_reach_the_fabric(tmp_path: Path) -> None:
    with Twin.up("rack", run_dir=tmp_path / "t", network="netns", fabric=True, timeout=90) as twin:
        net, plane = twin.network(), Network.attach(twin.run.network)
        leaf01, leaf02 = (plane.plan.namespaces[n].router_id or "" for n in ("ib-leaf01", "ib-leaf02"))
        (entry,) = twin.daemons("fabric")
        with grpc.insecure_channel(entry.grpc) as channel, twin.events("events/fabric/#") as events:
            stub = pb_grpc.FabricStub(channel)

            def states(system: str) -> set[str]:
                ports = stub.ListPorts(pb.FabricListPortsRequest(system=system), timeout=10).ports
                return {p.logical_state for p in ports}

            def spines_on_route() -> list[str]:
                r = stub.GetRoute(pb.FabricGetRouteRequest(src=pb.FabricEndpoint(server="gpu001", rail=0),
                                                           dst=pb.FabricEndpoint(server="gpu004", rail=4)), timeout=10)
                return [h.switch_name for h in r.hops if "spine" in h.switch_name]

            # A spine powered off: its ports go Down in the fabric, routes move to the other spine.
            fault = net.switch_down("ib-spine02")
            wait_until(lambda: states("ib-spine02") == {"Down"}, "ib-spine02's ports Down in the fabric")
            assert spines_on_route() == ["ib-spine01"]
            assert not any(p.disabled for p in stub.ListPorts(pb.FabricListPortsRequest(system="ib-spine02")).ports)
            assert ping(plane, "ib-leaf01", leaf01, leaf02)   # leaf to leaf, over the other spine
            ev = events.wait_for(lambda e: e.get("kind") == "port_down" and e.get("node") == "ib-spine02")
            assert f"network fault {fault.id}" in ev["message"]
            net.switch_up("ib-spine02")
            wait_until(lambda: states("ib-spine02") == {"Active"}, "ib-spine02's ports Active again")
            assert ping(plane, "ib-leaf01", leaf01, leaf02)

            # The spine OpenSM runs on powered off: a standby SM on the other spine takes over.
            assert stub.GetHealth(pb.FabricGetHealthRequest(), timeout=10).sm_node == "ib-spine01"
            net.switch_down("ib-spine01")
            wait_until(lambda: states("ib-spine01") == {"Down"}, "ib-spine01's ports Down in the fabric")
            # (the standby polls the master and takes over after its retries: it may still be on its way)
            wait_until(lambda: (lambda h: (h.sm_state, h.sm_node))(
                stub.GetHealth(pb.FabricGetHealthRequest(), timeout=10)) == ("MASTER", "ib-spine02"),
                "the standby SM on ib-spine02 MASTER")
            assert spines_on_route() == ["ib-spine02"]
            assert ping(plane, "ib-leaf01", leaf01, leaf02)
            net.switch_up("ib-spine01")
            wait_until(lambda: states("ib-spine01") == {"Active"}, "ib-spine01's ports Active again")

            # A host cut off: its eight HCA ports go Down, the server is degraded; back on reconnect.
            net.cut_off("gpu002")
            wait_until(lambda: states("gpu002") == {"Down"}, "gpu002's HCAs Down in the fabric")
            degraded = stub.Analyze(pb.FabricAnalyzeRequest(), timeout=30).degraded_servers
            assert [(d.server, d.rails_up) for d in degraded] == [("gpu002", 0)]
            net.reconnect("gpu002")
            wait_until(lambda: states("gpu002") == {"Active"}, "gpu002's HCAs Active again")
            assert not stub.Analyze(pb.FabricAnalyzeRequest(), timeout=30).degraded_servers
