"""The twin's planes as a Mininet `Topo`, from a plan spec (a JSON-able dict, `mininet_build.plan_spec`).

Only the standard library and Mininet are imported here, so that `mn --custom topologies/mininet.py`
(Debian's /usr/bin/python3, which has Mininet but not the twin's dependencies) can load this file
by path. Nodes (every one in its own namespace, as in the twin):

- hosts: `PlanHost`; compute and Ethernet routers (one per segment): `PlanRouter`, a Mininet
  switch that forwards by its kernel routes (the twin's planes are routed, ECMP), no controller;
- OOB switches: `PlanBridge`, Mininet's `LinuxBridge` in its own namespace, its bridge called `br0`
  as the twin's are (the operator port joins it), with the twin's STP settings.

With `setup` in the spec (the bare planes of `mn --custom`), each host applies its sysctls,
addresses, routes and plane guard in `config()`, each router when it starts; `twin up --network mininet` leaves that
to the twin's own phases (network.py), as for the netns backend.
"""

from __future__ import annotations

import subprocess
from typing import Any

from mininet.link import Intf
from mininet.node import Host, Node, Switch
from mininet.nodelib import LinuxBridge
from mininet.topo import Topo

MADE: list[Node] = []   # every node these classes made, for `stop_made`


def stop_made() -> None:
    """End the shells of the nodes made here (their namespaces, veths and bridges go with them):
    a clean-up of this network only, where `mn`'s own kills every Mininet process on the machine."""
    while MADE:
        node = MADE.pop()
        if node.shell:
            node.terminate()


def _apply(node: Node, setup: dict[str, Any] | None) -> None:
    """Sysctls, then `ip -batch` (addresses, routes), then the nftables plane guard, in the node."""
    if not setup:
        return
    for key, value in setup.get("sysctls", {}).items():
        node.cmd(f"sysctl -qw {key}={value}")
    for tool, script in (("ip", setup.get("ip")), ("nft", setup.get("nft"))):
        if not script:
            continue
        argv = ["ip", "-batch", "-"] if tool == "ip" else ["nft", "-f", "-"]
        proc = node.popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        _out, err = proc.communicate(script.encode())
        if proc.returncode:
            raise RuntimeError(f"{tool} in {node.name}: {err.decode().strip()}")


class PlanIntf(Intf):
    """Mininet's Intf, not set up on creation (an `ifconfig up` per end, two shell round trips per
    link), for `twin up --network mininet`, whose own phase brings every interface up before any
    route. (The bare planes keep Mininet's Intf: a host's routes need its peer's end up.)"""

    def config(self, up: bool | None = None, **params: Any) -> dict[str, Any]:   # type: ignore[override]
        return super().config(up=up, **params)


class PlanHost(Host):
    """A host; its default interface (what `IP()` and `pingall` use) is its OOB one, on every host."""

    def __init__(self, name: str, **params: Any) -> None:
        super().__init__(name, **params)
        MADE.append(self)

    def config(self, **params: Any) -> dict[str, Any]:
        r = super().config(**params)
        _apply(self, params.get("setup"))
        default = params.get("default")
        if default and default["ifname"] in self.nameToIntf:
            intf = self.nameToIntf[default["ifname"]]
            intf.ip, plen = default["address"].split("/")
            intf.prefixLen = int(plen)
        return r

    def defaultIntf(self) -> Any:
        default = self.params.get("default")
        if default and default["ifname"] in self.nameToIntf:
            return self.nameToIntf[default["ifname"]]
        return super().defaultIntf()


class PlanRouter(Switch):
    """A compute or Ethernet router (a Mininet switch in its own namespace, no controller): with a
    setup, forwarding and routes come from it (ip_forward=1, ECMP nexthop groups) when it starts."""

    def __init__(self, name: str, **params: Any) -> None:
        params["inNamespace"] = True
        super().__init__(name, **params)
        MADE.append(self)

    def start(self, _controllers: list[Any]) -> None:
        _apply(self, self.params.get("setup"))

    def connected(self) -> bool:
        return True


class PlanBridge(LinuxBridge):
    """Mininet's LinuxBridge, in its own namespace, named br0 there, with the twin's bridge options."""

    def __init__(self, name: str, bridge_args: str = "stp_state 0", **params: Any) -> None:
        self.bridge_args = bridge_args
        params["inNamespace"] = True   # the twin's switches each have a namespace; Mininet's default is the root's
        super().__init__(name, **params)
        MADE.append(self)

    def start(self, _controllers: list[Any]) -> None:
        lines = [f"link add br0 type bridge {self.bridge_args} mcast_snooping 0"]
        ports = [i.name for i in self.intfList() if i.name != "lo"]
        lines += [f"link set {name} master br0" for name in ports] + [f"link set {name} up" for name in ports]
        lines += ["link set lo up", "link set br0 up"]
        proc = self.popen(["ip", "-batch", "-"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE)
        _out, err = proc.communicate(("\n".join(lines) + "\n").encode())
        if proc.returncode:
            raise RuntimeError(f"bridge in {self.name}: {err.decode().strip()}")

    def stop(self, deleteIntfs: bool = True) -> None:
        self.cmd("ip link del br0")
        super(LinuxBridge, self).stop(deleteIntfs)


class TwinTopo(Topo):
    """`spec`: {"nodes": [{"name", "kind": host|router|bridge, "setup"?}], "links": [{"a", "a_if",
    "b", "b_if"}], "bridge_args": "..."}."""

    def build(self, spec: dict[str, Any]) -> None:   # type: ignore[override]
        for k, node in enumerate(spec["nodes"]):
            name, kind = node["name"], node["kind"]
            if kind == "bridge":
                self.addSwitch(name, cls=PlanBridge, bridge_args=spec["bridge_args"], dpid=f"{k + 1:x}")
            elif kind == "router":
                self.addSwitch(name, cls=PlanRouter, dpid=f"{k + 1:x}", setup=node.get("setup"))
            else:
                self.addHost(name, cls=PlanHost, ip=None, setup=node.get("setup"), default=node.get("default"))
        for link in spec["links"]:
            self.addLink(link["a"], link["b"], intfName1=link["a_if"], intfName2=link["b_if"])
