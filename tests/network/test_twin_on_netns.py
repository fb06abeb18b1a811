"""A whole twin on the namespace network: each daemon inside its host, reachable on its own plane."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from emulator.client import Twin
from emulator.network import Network
from tests.conftest import assert_nothing_left, kill_supervisor, twin_pids


def netns_inode(name: str) -> int:
    return os.stat(f"/run/netns/{name}").st_ino


def serving_from(net: Network, host: str, address: str) -> bool:
    """Is a gRPC health check to `address` answered from inside `host`'s namespace?"""
    code = ("import grpc,sys;from grpc_health.v1 import health_pb2 as h,health_pb2_grpc as g;"
            f"c=grpc.insecure_channel('{address}');"
            "sys.exit(0 if g.HealthStub(c).Check(h.HealthCheckRequest(),timeout=1.5).status==1 else 1)")
    import sys
    return net.exec(host, [sys.executable, "-c", code], timeout=20).returncode == 0


def our_namespaces(prefix: str) -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.startswith(prefix + "-")]


def operator_route() -> str:
    return subprocess.run(["ip", "-4", "route", "show", "10.103.0.0/16"], capture_output=True, text=True).stdout.strip()


# First, before the module's twin exists: one netns twin at a time owns the OOB prefix on this machine.
def test_a_killed_supervisor_leaves_a_network_that_down_removes(tmp_path: Path) -> None:
    twin = Twin.up("mini", run_dir=tmp_path / "crash", network="netns", timeout=60)
    prefix = f"ct{twin.manifest.slot}"
    pids = twin_pids(twin.run)
    assert our_namespaces(prefix)
    kill_supervisor(twin.run, pids)
    assert our_namespaces(prefix), "the namespaces outlive a killed supervisor until clean-up"
    twin.down()
    assert not our_namespaces(prefix)
    # the operator port goes with it at once, so that the next netns twin can start straight away
    assert not operator_route(), "the operator port's OOB route outlived twin down"
    assert_nothing_left(twin.run, pids)
    with grpc.insecure_channel(twin.daemon("gpu001").grpc) as channel, pytest.raises(grpc.RpcError):
        health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=1)


@pytest.fixture(scope="module")
def netns_twin(tmp_path_factory: pytest.TempPathFactory):
    twin = Twin.up("mini", run_dir=tmp_path_factory.mktemp("netns-twin"), network="netns", timeout=60)
    pids = twin_pids(twin.run)
    try:
        yield twin
    finally:
        twin.down()
        assert_nothing_left(twin.run, pids)
        assert not our_namespaces(f"ct{twin.manifest.slot}")


def test_each_daemon_runs_inside_its_host(netns_twin: Twin) -> None:
    status = json.loads(netns_twin.run.daemons.read_text())["daemons"]
    for d in netns_twin.daemons("gpu_node"):
        assert d.netns == f"ct{netns_twin.manifest.slot}-{d.name}"
        assert os.stat(f"/proc/{status[d.name]['pid']}/ns/net").st_ino == netns_inode(str(d.netns))
        assert d.grpc.startswith("10.103.")       # management API on the OOB plane
    assert netns_twin.gpu_node("gpu001").node().hostname == "gpu001"   # through the operator port


def test_management_api_answers_on_oob_only(netns_twin: Twin) -> None:
    net = Network.attach(netns_twin.manifest.network_backend.state_dir)
    gpu002 = netns_twin.daemon("gpu002")
    assert serving_from(net, "gpu001", gpu002.grpc)
    for plane in ("compute", "storage"):
        assert not serving_from(net, "gpu001", f"{gpu002.addresses[plane]}:50051"), plane


def test_operator_reaches_oob_but_no_data_plane(netns_twin: Twin) -> None:
    gpu001 = netns_twin.daemon("gpu001")
    assert subprocess.run(["ping", "-c", "1", "-W", "1", gpu001.addresses["oob"]],
                          capture_output=True).returncode == 0
    for plane in ("compute", "storage", "business"):
        assert subprocess.run(["ping", "-c", "1", "-W", "1", gpu001.addresses[plane]],
                              capture_output=True).returncode != 0, plane


def test_operator_shell_runs_commands_in_hosts_and_cuts_links(netns_twin: Twin, twin_exe: str) -> None:
    # `twin net cli` is Mininet's CLI over the twin (emulator/network/mininet_cli.py): Mininet's wording
    script = "\n".join(["nodes", "pingall compute", "link ib-leaf01 ib-spine01 down", "faults",
                        "link ib-leaf01 ib-spine01 up", "faults", "gpu002 ip -br addr show rail0",
                        "pingall nowhere", "bogus", "link ib-leaf01", "exit"]) + "\n"
    out = subprocess.run([twin_exe, "net", "cli", "--run-dir", str(netns_twin.run.path)], input=script,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60).stdout
    assert "available nodes are:" in out and "gpu001 gpu002" in out
    assert "*** Results: 0% dropped (2/2 received)" in out
    assert "link-down ib-leaf01:ib-spine01" in out and "no active network faults" in out
    assert netns_twin.daemon("gpu002").addresses["compute"] + "/32" in out
    assert "*** unknown plane 'nowhere'" in out and "*** Unknown command: bogus" in out
    assert "invalid number of args: link end1 end2 [up down]" in out
