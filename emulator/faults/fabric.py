"""InfiniBand faults through the fabric manager (services/fabric/sdk.py): a port disabled in ibsim
as `ibportstate LID PORT disable` does, OpenSM re-sweeping around it.

    inject("fabric", "ib-leaf01/3", "port-down")     # SYSTEM/PORT; clear: the port enabled again
    inject("fabric", "ib-leaf01", "switch-down")     # its server-facing ports (ports="all": every one)

A switch-down leaves the uplinks up by default: with every port of a leaf down the subnet manager can
no longer reach it to refresh its tables, and for the servers the loss is the same.
"""

from __future__ import annotations

from typing import Any

from emulator.errors import TwinRpcError
from emulator.events import FaultPayload
from emulator.faults.backend import Backend, FaultError


def port_of(target: str) -> tuple[str, int]:
    system, sep, port = target.rpartition("/")
    if not sep or not system or not port.isdigit():
        raise FaultError(f"a fabric port is SYSTEM/PORT (e.g. ib-leaf01/3), not {target!r}")
    return system, int(port)


class FabricFaults(Backend):
    subsystem = "fabric"
    kinds = {"port-down": "disable a port SYSTEM/PORT", "switch-down": "disable a switch's server-facing ports "
             "(ports=all: every port)"}
    params = {"ports": str}

    def present(self) -> str:
        return "" if self.twin.daemons("fabric") else \
            "this twin runs no fabric manager: start it with `twin up --fabric`"

    def _ports(self, system: str) -> list[Any]:
        try:
            with self.twin.fabric() as fabric:
                return [p for p in fabric.call("ListPorts", system=system).ports if p.system == system]
        except TwinRpcError as e:   # an unknown system
            raise FaultError(e.details) from None

    def _targets(self, target: str, kind: str, params: dict[str, Any]) -> tuple[str, list[int]]:
        """The switch or node and the port numbers this fault disables, checked against the fabric."""
        if kind == "port-down":
            system, port = port_of(target)
            known = {p.number: p for p in self._ports(system)}
            if port not in known:
                raise FaultError(f"the fabric has no cabled port {target!r}"
                                 + (f" ({system}'s: {min(known)}..{max(known)})" if known else ""))
            if known[port].logical_state == "Down":
                raise FaultError(f"{target} is already Down")
            return system, [port]
        if params.get("ports", "servers") not in ("servers", "all"):
            raise FaultError(f"ports must be servers or all, not {params['ports']!r}")
        ports = self._ports(target)
        if not ports:
            raise FaultError(f"the fabric has no switch {target!r} with cabled ports")
        servers = set(self.twin.gpu_nodes)
        mine = [p.number for p in ports if p.logical_state != "Down"
                and (params.get("ports") == "all" or p.peer_node.split(" ", 1)[0] in servers)]
        if not mine:
            raise FaultError(f"{target}: no port of it is up")
        return target, mine

    def check(self, target: str, kind: str, params: dict[str, Any]) -> dict[str, Any]:
        out = super().check(target, kind, params)
        self._targets(target, kind, out)
        return out

    def _set(self, system: str, ports: list[int], enabled: bool) -> Any:
        try:
            with self.twin.fabric() as fabric:
                return fabric.call("SetPortState", system=system, port=ports[0], more_ports=ports[1:], enabled=enabled)
        except TwinRpcError as e:
            raise FaultError(f"{system}: {e.details}") from None

    def inject(self, target: str, kind: str, params: dict[str, Any]) -> tuple[str, str]:
        system, ports = self._targets(target, kind, params)
        params["port_numbers"] = ports   # what clear enables again
        r = self._set(system, ports, enabled=False)
        which = f"port {ports[0]}" if len(ports) == 1 else f"ports {', '.join(map(str, ports))}"
        return "", f"{system} {which} {r.port.logical_state}; OpenSM re-swept in {r.resweep_seconds:.2f} s"

    def clear(self, fault: FaultPayload) -> str:
        system = port_of(fault.target)[0] if fault.kind == "port-down" else fault.target
        r = self._set(system, list(fault.params["port_numbers"]), enabled=True)
        return f"{system} enabled again ({r.port.logical_state}); OpenSM re-swept in {r.resweep_seconds:.2f} s"
