"""Network faults on a `--network netns` twin, through its network client (emulator/sdk/network.py),
which asks the supervisor (the live route tables) and keeps the network's own log (net-N ids).

    inject("network", "ib-leaf01:ib-spine01", "link-down")       # every parallel cable; ":0" only cable 0
    inject("network", "eth-leaf01:eth-spine01", "loss", percent=5)
    inject("network", "ib-leaf01", "switch-down")
    inject("network", "gpu001", "node-cut")                      # every cable of a host, every plane
    inject("network", "gpu001,gpu002|gpu003", "partition")

On a twin with the fabric manager, a compute cable goes down in the InfiniBand fabric (ibsim; OpenSM
re-sweeps and its routes become the plane's), as `twin net fault link-down` does.
"""

from __future__ import annotations

from typing import Any

from emulator.errors import TwinRpcError
from emulator.events import FaultPayload
from emulator.faults.backend import Backend, FaultError, Native, need
from emulator.network.errors import NetworkError
from emulator.network.events import describe


def cable(target: str) -> tuple[str, str, int | None]:
    parts = target.split(":")
    if len(parts) not in (2, 3) or not all(parts[:2]) or (len(parts) == 3 and not parts[2].isdigit()):
        raise FaultError(f"a cable is END1:END2 or END1:END2:INDEX (e.g. ib-leaf01:ib-spine01:0), not {target!r}")
    return parts[0], parts[1], int(parts[2]) if len(parts) == 3 else None


def groups(target: str) -> tuple[list[str], list[str]]:
    a, sep, b = target.partition("|")
    if not sep or not a or not b:
        raise FaultError(f"a partition is HOST,HOST|HOST,HOST (e.g. gpu001,gpu002|gpu003), not {target!r}")
    return a.split(","), b.split(",")


class NetworkFaults(Backend):
    subsystem = "network"
    kinds = {"link-down": "cut cable(s) A:B[:INDEX]", "loss": "drop percent=P % of packets on A:B[:INDEX]",
             "switch-down": "a switch down", "node-cut": "every cable of a host, on every plane",
             "partition": "no packet between two groups of hosts A,B|C,D"}
    params = {"percent": float}

    def present(self) -> str:
        return "" if self.twin.manifest.network_backend is not None else \
            "this twin runs no emulated network: network faults need `twin up --network netns`"

    def check(self, target: str, kind: str, params: dict[str, Any]) -> dict[str, Any]:
        out = super().check(target, kind, params)
        if kind in ("link-down", "loss"):
            cable(target)
        if kind == "loss" and not 0 < need(out, "percent", kind) <= 100:
            raise FaultError(f"percent must be in (0, 100], not {out['percent']:g}")
        if kind == "partition":
            groups(target)
        return out

    def inject(self, target: str, kind: str, params: dict[str, Any]) -> tuple[str, str]:
        net = self.twin.network()
        try:
            if kind == "link-down" and (ports := net.fabric_cables(*cable(target))):
                done = net.change(lambda: self._fabric(ports, enabled=False))
                return ",".join(f.id for f in net.raised), done   # the plane logs it when its routes follow
            net.change(lambda: self._apply(net, target, kind, params))
        except NetworkError as e:
            raise FaultError(str(e)) from None
        if not net.raised:
            raise FaultError(f"{kind} {target}: nothing changed (already so?)")
        return ",".join(f.id for f in net.raised), "; ".join(describe(f) for f in net.raised)

    def _apply(self, net: Any, target: str, kind: str, params: dict[str, Any]) -> Any:
        if kind == "link-down":
            return net.remote.link_down(*cable(target))
        if kind == "loss":
            return net.remote.set_loss(*cable(target)[:2], params["percent"], cable(target)[2])
        if kind == "switch-down":
            return net.remote.switch_down(target)
        if kind == "node-cut":
            return net.remote.cut_off(target)
        return net.remote.partition(*groups(target))

    def _fabric(self, ports: dict[str, list[int]], enabled: bool) -> str:
        """The compute cables' switch ports, through the fabric manager (one change per switch)."""
        done = []
        try:
            with self.twin.fabric() as fabric:
                for switch, numbers in ports.items():
                    r = fabric.call("SetPortState", system=switch, port=numbers[0], more_ports=numbers[1:],
                                    enabled=enabled)
                    done.append(f"{switch} port(s) {', '.join(map(str, numbers))} {r.port.logical_state} "
                                f"(OpenSM re-swept in {r.resweep_seconds:.2f} s)")
        except TwinRpcError as e:   # the fabric manager names the step that failed and rolled the others back
            raise FaultError(str(e)) from None
        return "; ".join(done) + " in the fabric"

    def clear(self, fault: FaultPayload) -> str:
        net = self.twin.network()
        active = {f.id for f in net.faults()}
        ids = [i for i in fault.backend_id.split(",") if i in active]
        try:
            if fault.kind == "link-down" and (ports := net.fabric_cables(*cable(fault.target))):
                return net.change(lambda: self._fabric(ports, enabled=True))
            if not ids:
                return "already cleared in the network"
            for i in ids:
                net.change(lambda i=i: net.remote.clear(i))
        except NetworkError as e:
            raise FaultError(str(e)) from None
        return "cleared"

    def native(self) -> list[Native]:
        return [Native(f.id, f.target, f.kind, describe(f), {k: v for k, v in f.detail.items() if k == "percent"})
                for f in self.twin.network().faults()]
