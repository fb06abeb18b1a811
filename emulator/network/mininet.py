"""A running twin's network as a real `mininet.net.Mininet`, whichever backend built it.

    from emulator.network.mininet import attach
    net = attach(".twin", plane="compute")        # hosts on that plane; IP() is their address on it
    net["gpu001"].cmd("ip -br addr")              # Mininet's own cmd/popen, inside the twin's host
    net.pingAll()                                 # every host pair on the chosen plane
    net.configLinkStatus("ib-leaf01", "ib-spine01", "down")   # the twin's fault API: routes,
    net.configLinkStatus("ib-leaf01", "ib-spine01", "up")     # fabric manager and fault log follow
    mininet.cli.CLI(net)                          # Mininet's CLI
    net.stop()                                    # ends the node shells; the twin keeps running

Every namespace is a node (hosts are `Host`s, compute and Ethernet routers and OOB bridges are
`Switch`es; an Ethernet switch is one router per segment, `eth-leaf01-storage`), every veth a
`Link`. Link names in `configLinkStatus` may be topology nodes (`eth-leaf01`) or namespaces.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from emulator.network.errors import NetworkError
from emulator.network.mininet_import import load_mininet
from emulator.network.network import Network
from emulator.network.plan import COMPUTE

load_mininet()

from mininet.log import error, output  # noqa: E402
from mininet.net import Mininet  # noqa: E402

from emulator.network.mininet_nodes import BoundIntf, BoundLink, NetnsHost, NetnsSwitch  # noqa: E402


class TwinMininet(Mininet):
    """A Mininet over a running twin: its nodes already run; changes go through the twin."""

    def __init__(self, twin_net: Network, run_dir: Path, plane: str) -> None:
        super().__init__(topo=None, build=False, controller=None)
        self.twin_net, self.run_dir, self.plane = twin_net, run_dir, plane
        self.built = True

    # --- the chosen plane ------------------------------------------------------------------

    def use_plane(self, plane: str) -> None:
        """Make `hosts`, `IP()` and `pingAll` about one plane: its hosts, their address on it."""
        plan = self.twin_net.plan
        if plane not in plan.planes:
            raise NetworkError(f"unknown plane {plane!r}; planes are {', '.join(plan.planes)}")
        self.plane = plane
        self.hosts = []
        for name, host in plan.hosts.items():
            node = self.nameToNode[name]
            node.plane_intf = next((i for i in node.intfList() if i.ip and i.ip == host.addresses.get(plane)), None)
            if node.plane_intf is not None:
                self.hosts.append(node)

    # --- changes through the twin ----------------------------------------------------------

    def configLinkStatus(self, src: str, dst: str, status: str) -> None:
        """Mininet's `link A B up|down`, as a twin network fault (the fault API): on a fabric twin's
        compute plane through the fabric manager; routes and the fault log follow."""
        from emulator.client import Twin
        from emulator.faults.backend import FaultError

        ends = []
        for name in (src, dst):
            node = self._twin_node(name)
            if node is None:
                error(f"{'src' if name == src else 'dst'} not in network: {name}\n")
                return
            ends.append(node)
        if status not in ("up", "down"):
            error(f"link status must be up or down, not {status!r}\n")
            return
        try:
            faults = Twin.connect(self.run_dir).faults()
            if status == "down":
                fault = faults.inject("network", f"{ends[0]}:{ends[1]}", "link-down")
                output(f"{fault.id}: {fault.effect}\n")
                return
            down = [f for f in faults.list(subsystem="network")
                    if f.kind == "link-down" and set(f.target.split(":")[:2]) == set(ends)]
            if not down:
                error(f"no link between {ends[0]} and {ends[1]} is down\n")
            for f in down:
                output(f"{faults.clear(f.id).id} cleared\n")
        except (FaultError, NetworkError) as e:
            error(f"{e}\n")

    def _twin_node(self, name: str) -> str | None:
        """The topology node a Mininet node name stands for (eth-leaf01-storage -> eth-leaf01)."""
        plan = self.twin_net.plan
        if name in plan.nodes:
            return name
        ns = plan.namespaces.get(name)
        return ns.node if ns else None

    # --- lifecycle: the twin owns the network -----------------------------------------------

    def __iter__(self) -> Any:
        """Every node, also hosts not on the chosen plane (Mininet's iterates `hosts` and `switches`)."""
        return iter(self.nameToNode)

    def __len__(self) -> int:
        return len(self.nameToNode)

    def start(self) -> None:
        pass   # already running

    def stop(self) -> None:
        """End this object's node shells; the twin's namespaces, links and daemons stay."""
        for node in self.nameToNode.values():
            node.terminate()


def attach(run_dir: str | Path = ".twin", plane: str = COMPUTE, state_dir: str | Path | None = None) -> TwinMininet:
    """A Mininet whose nodes are the running twin's hosts and switches (root; netns or mininet
    backend). `plane` chooses what `hosts`, `IP()` and `pingAll()` are about (`net.use_plane`)."""
    if os.geteuid() != 0:   # Mininet itself would print an error and exit the process
        raise NetworkError("Mininet on the twin needs root (its nodes' shells enter network namespaces)")
    run_dir = Path(run_dir)
    twin_net = Network.attach(Path(state_dir) if state_dir else _state_dir(run_dir))
    net = TwinMininet(twin_net, run_dir, plane)
    try:
        _add_nodes(net, twin_net)
        net.use_plane(plane)
    except BaseException:
        net.stop()
        raise
    return net


def _state_dir(run_dir: Path) -> Path:
    from emulator.rundir import RunDir

    try:
        backend = RunDir(run_dir).load_manifest().network_backend
    except Exception:   # noqa: BLE001 - no manifest: the conventional place
        backend = None
    return Path(backend.state_dir) if backend is not None else run_dir / "network"


def _add_nodes(net: TwinMininet, twin_net: Network) -> None:
    plan = twin_net.plan
    for k, (label, ns) in enumerate(plan.namespaces.items()):
        if ns.kind == "host":
            node: Any = NetnsHost(label, netns=ns.name)
            net.hosts.append(node)
        else:
            node = NetnsSwitch(label, netns=ns.name, dpid=f"{k + 1:x}")
            net.switches.append(node)
        net.nameToNode[label] = node
    for w in plan.wires:
        a, b = (BoundIntf(e.ifname, net.nameToNode[e.ns], e.ip, int(e.address.split("/")[1]) if e.address else None)
                for e in (w.a, w.b))
        net.links.append(BoundLink(a, b))
