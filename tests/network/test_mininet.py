"""Mininet as a way into the twin (issue 17): `twin up --network mininet`, `attach(run_dir)` giving a
real `mininet.net.Mininet` over the running twin, Mininet's CLI, and a Mininet user's own script."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from emulator.client import Twin
from emulator.network import build_network, kernel
from emulator.network.mininet import attach
from emulator.topology import load_topology
from tests.conftest import assert_nothing_left, kill_supervisor, twin_pids
from tests.conftest import netns_lock as holding_netns_lock
from tests.network.conftest import unique_prefix


@pytest.fixture(scope="module")
def netns_lock() -> Iterator[None]:
    """One namespace twin per machine: held while this module's twin is up."""
    with holding_netns_lock():
        yield


@pytest.fixture(scope="module")
def mn_twin(netns_lock: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Twin]:
    twin = Twin.up("mini", run_dir=tmp_path_factory.mktemp("mn-twin"), network="mininet", timeout=90)
    pids = twin_pids(twin.run)
    prefix = f"ct{twin.manifest.slot}"
    try:
        yield twin
    finally:
        twin.down()
        assert_nothing_left(twin.run, pids)
        assert not our_namespaces(prefix)


def our_namespaces(prefix: str) -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.startswith(prefix + "-")]


# First, before the module's twin exists (one namespace twin per machine).
def test_a_killed_supervisor_leaves_a_network_that_down_removes(netns_lock: None, tmp_path: Path) -> None:
    twin = Twin.up("mini", run_dir=tmp_path / "crash", network="mininet", timeout=90)
    prefix = f"ct{twin.manifest.slot}"
    pids = twin_pids(twin.run)
    in_namespaces = kernel.pids_in(our_namespaces(prefix))
    assert set(in_namespaces) <= set(pids), "Mininet's node shells ended once the network was built"
    kill_supervisor(twin.run, pids)
    assert our_namespaces(prefix), "the named namespaces outlive a killed supervisor until clean-up"
    twin.down()
    assert not our_namespaces(prefix)
    assert_nothing_left(twin.run, pids)


def network_faults(twin: Twin) -> list[str]:
    return [f"{f.kind} {f.target}" for f in twin.network().faults()]


def test_the_planes_are_built_by_mininet_and_the_daemons_run_in_them(mn_twin: Twin) -> None:
    backend = mn_twin.manifest.network_backend
    assert backend is not None and "Mininet's Python API" in backend.model_extra["built_by"]
    assert "mininet_build" in backend.model_extra["build_seconds"]
    assert mn_twin.manifest.network == "netns"   # the services see the same namespace network
    net = attach(mn_twin.run.path)
    try:
        gpu = mn_twin.daemon("gpu001")
        assert f"{gpu.addresses['compute']}/32" in net["gpu001"].cmd("ip -br addr show rail0")
        # the daemon listens inside its host: its gRPC port is open there
        port = gpu.grpc.rsplit(":", 1)[1]
        assert f":{port}" in net["gpu001"].cmd(f"ss -ltnH sport = :{port}")
        assert "br0" in net["oob-core01"].cmd("ip -br link show type bridge")
    finally:
        net.stop()


def test_attach_gives_a_mininet_whose_nodes_are_the_twins(mn_twin: Twin) -> None:
    from mininet.net import Mininet
    from mininet.node import Host, Switch

    net = attach(mn_twin.run.path, plane="compute")
    try:
        assert isinstance(net, Mininet)
        assert isinstance(net["gpu001"], Host) and isinstance(net["ib-leaf01"], Switch)
        assert [h.name for h in net.hosts] == ["gpu001", "gpu002"]   # the compute plane's hosts
        assert net["gpu002"].IP() == mn_twin.daemon("gpu002").addresses["compute"]
        ns = f"ct{mn_twin.manifest.slot}-gpu001"
        assert net["gpu001"].cmd("ip netns identify").strip() == ns
        out, _err = net["gpu001"].popen(["ip", "netns", "identify"]).communicate()
        assert out.decode().strip() == ns
        assert net.pingAll(timeout=1) == 0
        net.use_plane("oob")
        assert len(net.hosts) > 2 and net.pingAll(timeout=1) == 0
        with pytest.raises(Exception, match="unknown plane 'nowhere'"):
            net.use_plane("nowhere")
    finally:
        net.stop()
    assert mn_twin.network().faults() == []   # attaching and stopping changed nothing


def test_config_link_status_goes_through_the_twins_fault_api(mn_twin: Twin) -> None:
    net = attach(mn_twin.run.path)
    try:
        net.configLinkStatus("ib-leaf01", "ib-spine01", "down")
        assert network_faults(mn_twin) == ["link-down ib-leaf01:ib-spine01:*"]
        assert [f.kind for f in mn_twin.faults().list(subsystem="network")] == ["link-down"]
        links = net["ib-leaf01"].cmd("ip -br link")
        assert "ib-spine01-0@" in links and "DOWN" in links.split("ib-spine01-0@")[1].splitlines()[0]
        routes = net["ib-leaf01"].cmd("ip route show 10.100.16.0/20; ip nexthop show")
        assert "ib-spine01" not in routes   # the plane's routes moved to the other spine
        assert net.pingAll(timeout=1) == 0
        net.configLinkStatus("ib-leaf01", "ib-spine01", "up")
        assert network_faults(mn_twin) == []
        net.configLinkStatus("ib-leaf01", "nowhere", "down")   # Mininet's way: an error, no change
        net.configLinkStatus("ib-leaf01", "ib-spine01", "sideways")
        assert network_faults(mn_twin) == []
    finally:
        net.stop()


def test_twin_net_cli_is_mininets_cli(mn_twin: Twin, twin_exe: str) -> None:
    script = "\n".join(["nodes", "pingall", "plane oob", "pingall", "ib-leaf01 ip -br addr show lo",
                        "link ib-leaf01 ib-spine01 down", "faults", "link ib-leaf01 ib-spine01 up", "faults",
                        "exit"]) + "\n"
    out = subprocess.run([twin_exe, "net", "cli", "--run-dir", str(mn_twin.run.path)], input=script,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120).stdout
    assert "available nodes are:" in out and "ib-spine01" in out and "oob-core01" in out
    assert "*** Results: 0% dropped (2/2 received)" in out
    assert out.count("*** Results: 0% dropped") == 2
    assert "10.100.255.1/32" in out   # ib-leaf01's router id, from a command run in the switch
    assert "link-down ib-leaf01:ib-spine01:*" in out and "no active network faults" in out
    assert network_faults(mn_twin) == []


# A Mininet user's own script, using only Mininet's documented API on the running twin (README too).
USER_SCRIPT = """
from emulator.network.mininet import attach
from mininet.cli import CLI

net = attach(RUN_DIR, plane="compute")
gpu1, gpu2 = net.get("gpu001", "gpu002")
print(gpu1.cmd("ping -c1 -W1", gpu2.IP()).splitlines()[-2])
print("loss %d%%" % net.pingAll(timeout=1))
net.configLinkStatus("ib-leaf01", "ib-spine01", "down")
print("after the cut: loss %d%%" % net.pingAll(timeout=1))
net.configLinkStatus("ib-leaf01", "ib-spine01", "up")
CLI(net, script=SCRIPT)
net.stop()
"""


def test_a_mininet_users_script_drives_the_running_twin(mn_twin: Twin, tmp_path: Path) -> None:
    cli_script = tmp_path / "cli.mn"
    marker = tmp_path / "from-gpu002"
    cli_script.write_text(f"gpu002 sh -c 'ip netns identify > {marker}'\npingall\n")
    code = USER_SCRIPT.replace("RUN_DIR", repr(str(mn_twin.run.path))).replace("SCRIPT", repr(str(cli_script)))
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                            timeout=120, cwd=Path(__file__).parents[2])
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    assert "1 packets transmitted, 1 received" in out
    assert "loss 0%" in out and "after the cut: loss 0%" in out
    assert marker.read_text().strip() == f"ct{mn_twin.manifest.slot}-gpu002"
    cleared = [f for f in mn_twin.faults().list(include_cleared=True, subsystem="network") if not f.active]
    assert cleared and cleared[-1].target == "ib-leaf01:ib-spine01"
    assert network_faults(mn_twin) == []


def test_attach_works_on_a_network_the_netns_backend_built(netns_lock: None, tmp_path: Path) -> None:
    twin_net = build_network(load_topology("mini"), prefix=unique_prefix("tm"), state_dir=tmp_path / "network")
    try:
        net = attach(tmp_path, state_dir=tmp_path / "network")
        try:
            assert net["gpu001"].cmd("ip netns identify").strip() == f"{twin_net.prefix}-gpu001"
            assert net.pingAll(timeout=1) == 0
        finally:
            net.stop()
    finally:
        twin_net.stop()


def test_mn_custom_file_brings_up_the_bare_planes(netns_lock: None) -> None:
    root = Path(__file__).parents[2]
    commands = "pingall\ngpu001 ping -c1 -W1 10.100.0.2\nib-leaf01 ip -br addr show lo\nexit\n"
    result = subprocess.run(["mn", "--custom", str(root / "topologies" / "mininet.py"), "--topo", "twin,mini",
                             "--controller", "none"], input=commands, capture_output=True, text=True,
                            timeout=180, cwd=root)
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    assert "*** Results: 0% dropped" in out          # every host pair on the OOB plane
    assert "1 packets transmitted, 1 received" in out   # compute, routed through the leaf
    assert "10.100.255.1/32" in out
    assert "Caught exception" not in out


def test_a_failing_mn_custom_build_stops_only_its_own_nodes(netns_lock: None, tmp_path: Path) -> None:
    """mn's own clean-up on an exception kills every Mininet process on the machine; with the twin's
    custom file, only the nodes it made stop."""
    root = Path(__file__).parents[2]
    spec = ('{"prefix": "mn", "topology": "x", "bridge_args": "stp_state 0", '
            '"nodes": [{"name": "h1", "kind": "host", "setup": {"sysctls": {}, "ip": "bogus command", "nft": ""}}, '
            '{"name": "s1", "kind": "bridge"}], "links": [{"a": "h1", "a_if": "oob0", "b": "s1", "b_if": "h1"}]}')
    planner = tmp_path / "planner"
    planner.write_text(f"#!/bin/sh\necho '{spec}'\n")
    planner.chmod(0o755)
    bystander = subprocess.Popen(["sleep", "60"], cwd=tmp_path)   # stands for another's process
    try:
        result = subprocess.run(["mn", "--custom", str(root / "topologies" / "mininet.py"), "--topo", "twin,x",
                                 "--controller", "none"], input="exit\n", capture_output=True, text=True,
                                timeout=120, env={**os.environ, "CLUSTERTWIN_PYTHON": str(planner)})
        out = result.stdout + result.stderr
        assert 'Object "bogus" is unknown' in out and "pkill" not in out and "killall" not in out
        assert bystander.poll() is None
        shells = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout.splitlines()
        assert not [line for line in shells if line.endswith(("mininet:h1", "mininet:s1"))]
    finally:
        bystander.kill()
        bystander.wait()
