"""The namespace network: the twin's three planes in real network namespaces, their nodes and links
made by `ip -batch` (`--network netns`) or by Mininet's Python API (`--network mininet`,
mininet_build.py); `mininet.attach(run_dir)` is any running one as a `mininet.net.Mininet`.

    from emulator.network import build_network, clean_network
    net = build_network(load_topology("rack"), prefix="ct0", state_dir=run_dir / "network")
    net.exec("gpu001", ["ping", "-c", "1", "-W", "1", net.address("gpu004", "compute")])
    net.link_down("ib-leaf01", "ib-spine01"); net.link_up("ib-leaf01", "ib-spine01")
    net.stop()                     # or, after a crash: clean_network(run_dir / "network")

See `network.py` for how each plane is built and isolated, `plan.py` for names and addresses,
`routing.py` for the route-table interface, `faults.py` for faults, `cleanup.py` for clean-up.
"""

from pathlib import Path

from emulator.network import mininet_build, network
from emulator.network.cleanup import clean_network
from emulator.network.errors import NetworkError
from emulator.network.faults import NetFault
from emulator.network.network import DEFAULT_BANDWIDTH_SCALE, STATE_FILE, Network
from emulator.network.plan import NetworkPlan, make_network_plan
from emulator.network.routing import Nexthop, Route, RouteTable, shortest_path_routes
from emulator.topology import Topology


def build_network(topo: Topology | str, prefix: str = "ct0", bandwidth_scale: float | None = None,
                  state_dir: Path | str | None = None, backend: str = "netns") -> Network:
    """network.py's build, with the nodes and links made by `backend`: "netns" (`ip -batch`) or
    "mininet" (Mininet's Python API, mininet_build.py). Chosen here so that network.py and the
    Mininet builder, which uses network.py's pieces, do not import each other."""
    make_nodes = mininet_build.create if backend == "mininet" else None
    return network.build_network(topo, prefix, bandwidth_scale, state_dir, backend, make_nodes)


__all__ = [
    "DEFAULT_BANDWIDTH_SCALE",
    "STATE_FILE",
    "NetFault",
    "Network",
    "NetworkError",
    "NetworkPlan",
    "Nexthop",
    "Route",
    "RouteTable",
    "build_network",
    "clean_network",
    "make_network_plan",
    "shortest_path_routes",
]
