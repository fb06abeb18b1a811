"""The twin's emulated network (`twin up --network netns`): `Twin.network()`, what `twin net fault` drives.

    net = twin.network()
    f = net.link_down("ib-leaf01", "ib-spine01")        # a NetFault (id, kind, target, detail)
    net.clear(f.id)
    net.partition(["gpu001"], ["gpu002"]); net.heal()
    net.faults(include_cleared=True)                    # the network's fault log

Every change goes through the supervisor, which holds the live route tables (its control socket),
and each fault raised or cleared is published on the bus as `twin net fault` does
(events/network/<kind>, retained faults/network/<id>). Changes are serialized with the CLI's by
the network's fault lock. On a `--fabric` twin, compute cables are the fabric manager's: take them
down with `twin.fabric()` (SetPortState) or `twin net fault`, which routes them through it.
"""

from __future__ import annotations

import fcntl
from collections.abc import Callable
from pathlib import Path
from typing import Any

from emulator.manifest import Manifest
from emulator.rundir import RunDir, RunDirError


class NetworkClient:
    def __init__(self, run: RunDir, manifest: Manifest,
                 cable_ports: Callable[[str, str, int | None], dict[str, list[int]] | None] | None = None) -> None:
        from emulator.network.remote import RemoteNetwork

        backend = manifest.network_backend
        if backend is None:
            raise RunDirError(f"twin {manifest.twin!r} in {run.path} runs with the {manifest.network} network: "
                              "network faults need `twin up --network netns`")
        self.twin, self.broker = manifest.twin, manifest.broker
        self.state_dir = Path(backend.state_dir)
        self.remote = RemoteNetwork(run.control_socket)
        self.run, self.manifest = run, manifest
        self._cable_ports = cable_ports   # the fabric service's lookup (Twin.fabric_cable_ports), if installed
        self.raised: list[Any] = []    # what the last change raised and cleared (NetFaults)
        self.cleared: list[Any] = []

    def _change(self, op: Callable[[], Any]) -> Any:
        """Run one change under the fault lock; publish the faults it raised and cleared."""
        from emulator.network import events

        with open(self.state_dir / ".faults.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            before = {f.id for f in self.remote.faults()}
            result = op()
            now = self.remote.faults(include_cleared=True)
        raised = [f for f in now if f.active and f.id not in before]
        cleared = [f for f in now if not f.active and f.id in before]
        self.raised, self.cleared = raised, cleared
        events.publish(self.broker, self.twin, raised, cleared, clock=self.manifest.clock.to_clock())
        return result

    def change(self, op: Callable[[], Any]) -> Any:
        """Any change (e.g. the fabric manager's, for compute cables) under the network's fault lock,
        its faults published and kept in `raised` and `cleared`."""
        return self._change(op)

    def fabric_cables(self, a: str, b: str, index: int | None = None) -> dict[str, list[int]] | None:
        """On a twin whose fabric manager drives the compute plane: per switch, the ports of the
        compute cable(s) between a and b (index None: every parallel one) on that switch. None when
        this twin has no fabric manager or these are not compute cables."""
        if self._cable_ports is None or not self.manifest.daemons_of("fabric"):
            return None
        return self._cable_ports(a, b, index)   # services/fabric/cables.py

    def show(self) -> dict[str, Any]:
        """Per plane: what is emulated and how (`twin net show`)."""
        return self.remote.show()

    def faults(self, include_cleared: bool = False) -> list[Any]:
        """The fault log: `NetFault`s, active ones only unless include_cleared."""
        return self.remote.faults(include_cleared=include_cleared)

    def link_down(self, a: str, b: str, index: int | None = None) -> Any:
        return self._change(lambda: self.remote.link_down(a, b, index))

    def link_up(self, a: str, b: str, index: int | None = None) -> list[Any]:
        return self._change(lambda: self.remote.link_up(a, b, index))

    def set_loss(self, a: str, b: str, percent: float, index: int | None = None) -> Any:
        """Drop `percent` % of packets on the cable(s); 0 clears."""
        return self._change(lambda: self.remote.set_loss(a, b, percent, index))

    def switch_down(self, name: str) -> Any:
        return self._change(lambda: self.remote.switch_down(name))

    def switch_up(self, name: str) -> list[Any]:
        return self._change(lambda: self.remote.switch_up(name))

    def cut_off(self, host: str) -> Any:
        """Unplug every cable of a host, on every plane."""
        return self._change(lambda: self.remote.cut_off(host))

    def reconnect(self, host: str) -> list[Any]:
        return self._change(lambda: self.remote.reconnect(host))

    def partition(self, group_a: list[str], group_b: list[str]) -> Any:
        return self._change(lambda: self.remote.partition(list(group_a), list(group_b)))

    def heal(self, fault_id: str | None = None) -> list[Any]:
        return self._change(lambda: self.remote.heal(fault_id))

    def clear(self, fault_id: str) -> list[Any]:
        """Clear any active network fault by id (cables through the fabric: see the module's note)."""
        return self._change(lambda: self.remote.clear(fault_id))
