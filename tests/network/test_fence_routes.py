"""Issue 13 case 7: nothing leaves the machine by mistake. While a netns twin runs, the machine's own
namespace routes the twin's plane prefixes nowhere (an unreachable route each) except the OOB
prefix over the operator port; `twin down` and `twin net clean` take the routes away. Checked
with `ip route get`, which asks the kernel's FIB and sends no packet."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from emulator.client import Twin
from emulator.network import build_network
from emulator.network.operator import attach_operator_port
from emulator.network.plan import operator_ifname
from emulator.topology import load_topology
from tests.network.conftest import unique_prefix

TWIN = str(Path(sys.executable).parent / "twin")
PROBES = ["10.100.0.4", "10.101.0.4", "10.102.0.4"]   # compute, storage, business


def route_get(address: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", "-4", "route", "get", address], capture_output=True, text=True, timeout=10)


def fence() -> list[str]:
    out = subprocess.run(["ip", "-4", "route", "show", "proto", "77"], capture_output=True, text=True, timeout=10)
    return sorted(line.strip() for line in out.stdout.splitlines())


def unreachable(address: str) -> bool:
    done = route_get(address)
    return done.returncode != 0 and "No route to host" in done.stderr


def test_a_netns_twin_routes_its_planes_nowhere_but_oob_over_the_operator_port(tmp_path: Path) -> None:
    assert fence() == [], "a fence is already here: another netns twin runs, or one was left behind"
    assert not any(unreachable(a) for a in PROBES)   # before: the default route (or none) takes them
    with Twin.up("mini", run_dir=tmp_path / "t", network="netns", timeout=60) as twin:
        backend = twin.manifest.network_backend
        assert backend is not None
        prefixes = sorted(p.prefix for p in backend.planes.values())
        assert fence() == sorted(f"unreachable {p}" + (" metric 4294967295" if p.startswith("10.103.") else "")
                                 for p in prefixes)
        for address in PROBES + ["10.103.7.7"]:   # 10.103.7.7: no host has it, yet it is on the OOB link
            if address.startswith("10.103."):
                assert f"dev {operator_ifname(backend.prefix)}" in route_get(address).stdout
            else:
                assert unreachable(address), route_get(address)
        oob = twin.daemon("gpu001").grpc.rsplit(":", 1)[0]
        assert f"dev {operator_ifname(backend.prefix)} " in route_get(oob).stdout
    assert fence() == []
    assert not any(unreachable(a) for a in PROBES)


@pytest.mark.parametrize("by", ["state-dir", "prefix"])
def test_net_clean_removes_the_fence_of_a_crashed_twin(tmp_path: Path, by: str) -> None:
    assert fence() == []
    net = build_network(load_topology("mini"), prefix=unique_prefix("tf"), state_dir=tmp_path / "network")
    try:
        attach_operator_port(net)   # and then the "supervisor" dies: nothing stops the network
        assert len(fence()) == 4 and unreachable("10.100.0.4")
        if by == "prefix":   # the state file is lost too: the operator port says the fence is the twin's
            (tmp_path / "network" / "network.json").unlink()
            args = ["--prefix", net.prefix]
        else:
            args = ["--state-dir", str(tmp_path / "network")]
        done = subprocess.run([TWIN, "net", "clean", *args], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert fence() == []
        assert not unreachable("10.100.0.4")
        assert not Path(f"/sys/class/net/{operator_ifname(net.prefix)}").exists()
    finally:
        net.stop()
