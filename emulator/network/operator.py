"""The operator's port: one veth from the machine's own namespace onto the OOB core switch.

Real clusters are run from a jump host on the out-of-band network; this port is that host. It is
what lets `twin` commands, tests and Prometheus on this machine reach the daemons' management
APIs, which listen inside their hosts' namespaces, while the data planes stay unreachable from
here (the port is on the OOB bridge only, and its address is in the OOB prefix).

While the port is attached, this namespace routes the twin's plane prefixes (10.100-10.103/16)
nowhere: an `unreachable` route per prefix (`fence_routes`), so a mistyped command sends no
packet out of the machine's default route. The OOB prefix's fence has the highest metric, under
the operator veth's own route, which stays the way to the OOB plane. `clean_network` removes them.
"""

from __future__ import annotations

import subprocess

from emulator.network.errors import NetworkError
from emulator.network.network import Network
from emulator.network.plan import FENCE_PROTO, OOB, OOB_OCTET, operator_ifname

OPERATOR_ADDRESS = f"10.{OOB_OCTET}.255.254"
OOB_PREFIX_LEN = 16
LAST_METRIC = 4294967295


def fence_routes(net: Network) -> list[str]:
    """`ip route` specs of the unreachable route for each of the twin's plane prefixes."""
    oob = net.plan.plane_prefix[OOB]
    return [f"unreachable {prefix} proto {FENCE_PROTO}" + (f" metric {LAST_METRIC}" if prefix == oob else "")
            for prefix in sorted(set(net.plan.plane_prefix.values()))]


def attach_operator_port(net: Network) -> str:
    """Connect this namespace to the first OOB core bridge; returns the operator's address."""
    route = subprocess.run(["ip", "-4", "route", "show", f"10.{OOB_OCTET}.0.0/{OOB_PREFIX_LEN}"],
                           capture_output=True, text=True).stdout.strip()
    route = "; ".join(line for line in route.splitlines() if " dev " in line)   # not a fence left by a crash
    if route:
        raise NetworkError(f"this machine already routes the OOB prefix ({route}): another twin with the netns "
                           "backend is running; stop it first")
    core = net.netns("oob-core01")
    ours, peer = operator_ifname(net.prefix), "operator"
    script = (f"link add {ours} type veth peer name {peer} netns {core}\n"
              f"addr add {OPERATOR_ADDRESS}/{OOB_PREFIX_LEN} dev {ours}\n"
              f"link set {ours} up\n")
    result = subprocess.run(["ip", "-batch", "-"], input=script, capture_output=True, text=True)
    if result.returncode:
        raise NetworkError(f"cannot attach the operator port: {result.stderr.strip()}")
    # The peer end joins the core's bridge; it goes when the core namespace is deleted.
    result = subprocess.run(["ip", "-n", core, "-batch", "-"], capture_output=True, text=True,
                            input=f"link set {peer} master br0\nlink set {peer} up\n")
    if result.returncode:
        raise NetworkError(f"cannot attach the operator port to {core}: {result.stderr.strip()}")
    fence = fence_routes(net)
    net.root_routes = fence   # recorded before they exist, so a crash right now still cleans them
    net._save()
    result = subprocess.run(["ip", "-batch", "-"], capture_output=True, text=True,
                            input="".join(f"route replace {r}\n" for r in fence))
    if result.returncode:
        raise NetworkError(f"cannot fence the plane prefixes in this namespace: {result.stderr.strip()}")
    return OPERATOR_ADDRESS
