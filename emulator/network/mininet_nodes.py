"""Mininet nodes, interfaces and links bound to namespaces, veths and bridges that already exist.

Mininet's own nodes start their shell with `mnexec -cdn` (a new, unnamed namespace) and make their
links; these start it with `ip netns exec NS` in the twin's namespace, and their interfaces and
links only describe the twin's veths: nothing here creates, reconfigures or deletes a kernel object
(Mininet's `Intf.config` would set every interface up, undoing a link-down fault). Every node's
`cmd`, `popen` (`mnexec -da PID` joins the shell's namespace) and `sendCmd` are Mininet's own.

Import after `emulator.network.mininet_import.load_mininet()`.
"""

from __future__ import annotations

from typing import Any

from mininet.link import Intf, Link
from mininet.node import Host, Switch


class _InNetns:
    """Mixin: the node's shell runs in the existing namespace `params['netns']`."""

    def _popen(self, cmd: list[str], **params: Any) -> Any:
        if getattr(self, "shell", None) is None and cmd and cmd[0] == "mnexec":
            # The shell: mnexec -cd, then `ip netns exec NS` execs env and bash in the same process,
            # so the pid Mininet records is the shell's, inside the namespace.
            cmd = [cmd[0], cmd[1], "ip", "netns", "exec", self.params["netns"], *cmd[2:]]
        return super()._popen(cmd, **params)  # type: ignore[misc]


class NetnsHost(_InNetns, Host):
    """A twin host. `plane_intf` is its interface on the plane Mininet's `IP()` and `pingAll` use."""

    def __init__(self, name: str, **params: Any) -> None:
        super().__init__(name, inNamespace=False, **params)
        self.plane_intf: Intf | None = None

    def defaultIntf(self) -> Intf | None:
        return self.plane_intf or super().defaultIntf()


class NetnsSwitch(_InNetns, Switch):
    """A twin switch namespace: a compute or Ethernet router (one per segment), or an OOB bridge.
    It forwards on its own (kernel routes or a bridge): nothing to start or stop, no controller."""

    def __init__(self, name: str, **params: Any) -> None:
        super().__init__(name, inNamespace=False, **params)

    def start(self, controllers: list[Any]) -> None:
        pass

    def stop(self, deleteIntfs: bool = True) -> None:
        self.terminate()

    def connected(self) -> bool:
        return True


class BoundIntf(Intf):
    """An existing interface: name, node, address; config() touches nothing."""

    def __init__(self, name: str, node: Any, ip: str | None = None, prefix_len: int | None = None) -> None:
        super().__init__(name, node=node)
        self.ip, self.prefixLen = ip, prefix_len

    def config(self, **_params: Any) -> dict[str, Any]:
        return {}

    def delete(self) -> None:
        pass   # the twin's namespaces own the veth


class BoundLink(Link):
    """An existing veth pair (one wire of a twin cable)."""

    def __init__(self, intf1: BoundIntf, intf2: BoundIntf) -> None:   # noqa: D107 - no makeIntfPair
        self.intf1, self.intf2 = intf1, intf2
        intf1.link = intf2.link = self

    def stop(self) -> None:
        pass

    def delete(self) -> None:
        pass
