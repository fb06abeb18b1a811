"""`twin net cli`: Mininet's own CLI over the running twin (`emulator.network.mininet.attach`), with
the twin's commands added:

    mininet> nodes | net | links | intfs | dump      Mininet's, over the twin's nodes and veths
    mininet> gpu001 ping -c1 gpu002                  Mininet's: a command in a host (names become IPs
                                                     on the chosen plane)
    mininet> link ib-leaf01 ib-spine01 down          Mininet's, through the twin's fault API
    mininet> pingall [PLANE|TIMEOUT]                 Mininet's, on PLANE (default: the chosen one)
    mininet> plane [PLANE]                           the twin's: show or choose the plane
    mininet> faults                                  the twin's: active network faults
"""

from __future__ import annotations

from typing import Any

from emulator.network.errors import NetworkError
from emulator.network.mininet_import import load_mininet

load_mininet()

from mininet.cli import CLI  # noqa: E402
from mininet.log import error, output  # noqa: E402

from emulator.network.mininet import TwinMininet  # noqa: E402


class TwinCLI(CLI):
    prompt = "mininet> "
    identchars = CLI.identchars + "-"   # node names such as ib-leaf01 and pdu-r01-1 are commands' first word

    def __init__(self, net: TwinMininet, **kwargs: Any) -> None:
        self.twin_net = net
        super().__init__(net, **kwargs)

    def do_pingall(self, line: str) -> None:
        """pingall [PLANE|TIMEOUT]: ping between all hosts of a plane (Mininet's pingall)."""
        arg = line.strip()
        if arg and not arg.replace(".", "", 1).isdigit():
            if not self._use(arg):
                return
            arg = ""
        self.mn.pingAll(arg or None)

    def do_plane(self, line: str) -> None:
        """plane [PLANE]: the plane that hosts, IP() and pingall are about; with PLANE, choose it."""
        if line.strip() and not self._use(line.strip()):
            return
        plan = self.twin_net.twin_net.plan
        output(f"plane {self.mn.plane} ({plan.plane_prefix[self.mn.plane]}): "
               f"{len(self.mn.hosts)} hosts; planes: {', '.join(plan.planes)}\n")

    def do_faults(self, _line: str) -> None:
        """faults: the twin's active network faults."""
        from emulator.network.remote import RemoteNetwork
        from emulator.rundir import RunDir

        try:
            faults = RemoteNetwork(RunDir(self.mn.run_dir).control_socket).faults()
        except NetworkError as e:
            error(f"*** {e}\n")
            return
        for f in faults:
            output(f"{f.id} {f.kind} {f.target}\n")
        if not faults:
            output("no active network faults\n")

    def _use(self, plane: str) -> bool:
        try:
            self.mn.use_plane(plane)
        except NetworkError as e:
            error(f"*** {e}\n")
            return False
        return True
