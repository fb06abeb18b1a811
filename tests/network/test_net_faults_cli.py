"""`twin net fault ...` on a running netns twin: real effects on packets and gRPC, events on the bus,
clear errors for bad input."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from emulator.client import Twin
from emulator.network import Network
from tests.network.conftest import reachable

TWIN = str(Path(sys.executable).parent / "twin")


@pytest.fixture(scope="module")
def twin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Twin]:
    with Twin.up("mini", run_dir=tmp_path_factory.mktemp("net-faults"), network="netns", timeout=60) as t:
        yield t


def net_cmd(twin: Twin, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([TWIN, "net", *args, "--run-dir", str(twin.run.path)], capture_output=True, text=True,
                          timeout=60)


def serving(address: str) -> bool:
    with grpc.insecure_channel(address) as channel:
        try:
            return health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=1).status == 1
        except grpc.RpcError:
            return False


def poll(predicate, timeout: float = 15.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return False


def test_leaf_spine_link_down_is_an_event_and_the_fabric_still_connects(twin: Twin) -> None:
    net = Network.attach(twin.run.network)
    with twin.events("events/network/#", "faults/network/#") as sub:
        done = net_cmd(twin, "fault", "link-down", "ib-leaf01", "ib-spine01", "--index", "0")
        assert done.returncode == 0, done.stderr
        event = sub.wait_for(lambda m: m["_topic"].endswith("/events/network/link-down"), timeout=10)
        fault = event["fault"]
        assert event["node"] == "network" and event["kind"] == "link-down"
        assert fault["target"] == "ib-leaf01:ib-spine01:0" and fault["active"] and fault["cleared_at"] is None
        retained = sub.wait_for(lambda m: m["_topic"].endswith(f"/faults/network/{fault['id']}"), timeout=10)
        assert retained["id"] == fault["id"]
        assert fault["id"] in net_cmd(twin, "faults").stdout

        # Every rail of gpu001 still reaches gpu002 over the compute plane (the remaining spine links).
        pairs = [(f"rail{r}", a) for r, a in enumerate(net.rail_addresses("gpu002"))]
        got = reachable(net, "gpu001", pairs, tries=3)
        assert all(got.values()), got

        cleared = net_cmd(twin, "fault", "clear", fault["id"])
        assert cleared.returncode == 0, cleared.stderr
        event = sub.wait_for(lambda m: m["_topic"].endswith("/events/network/link-down-clear"), timeout=10)
        assert event["fault"]["id"] == fault["id"] and not event["fault"]["active"] and event["fault"]["cleared_at"]
        sub.wait_for(lambda m: m["_topic"].endswith(f"/faults/network/{fault['id']}") and not m.get("id"), timeout=10)
    assert fault["id"] not in net_cmd(twin, "faults").stdout
    assert fault["id"] in net_cmd(twin, "faults", "--all").stdout


def test_cut_host_loses_its_management_api_until_reconnected(twin: Twin) -> None:
    address = twin.daemon("gpu002").grpc
    assert serving(address)
    with twin.events("events/network/#") as sub:
        done = net_cmd(twin, "fault", "cut", "gpu002")
        assert done.returncode == 0, done.stderr
        assert sub.wait_for(lambda m: m.get("kind") == "node-cut", timeout=10)["fault"]["target"] == "gpu002"
        assert poll(lambda: not serving(address)), "gpu002's gRPC still answers while it is cut off"
        assert serving(twin.daemon("gpu001").grpc)
        done = net_cmd(twin, "fault", "reconnect", "gpu002")
        assert done.returncode == 0, done.stderr
        sub.wait_for(lambda m: m.get("kind") == "node-cut-clear", timeout=10)
    assert poll(lambda: serving(address)), "gpu002's gRPC did not come back after reconnect"


BAD_INPUT = [
    (("fault", "link-down", "ib-leaf01", "nosuch"), "no host or switch 'nosuch'"),
    (("fault", "link-down", "gpu001", "ib-spine01"), "no link between 'gpu001' and 'ib-spine01'"),
    (("fault", "switch-down", "gpu001"), "no switch 'gpu001'"),
    (("fault", "cut", "gpu999"), "no host 'gpu999'"),
    (("fault", "clear", "net-999"), "no active network fault 'net-999'"),
    (("fault", "heal", "net-999"), "no active partition 'net-999'"),
    (("fault", "loss", "ib-leaf01", "ib-spine01", "--percent", "150"), "between 0 and 100"),
    (("fault", "partition", "--a", "gpu001", "--b", "gpu001"), "in both groups"),
    (("fault", "flap", "ib-leaf01", "ib-spine01", "--times", "1000"), "--times"),
]


def test_bad_input_is_one_clear_line_exit_2_and_changes_nothing(twin: Twin) -> None:
    before = net_cmd(twin, "faults", "--all", "--json").stdout
    for args, message in BAD_INPUT:
        done = net_cmd(twin, *args)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert message in done.stderr.replace("\n", " ") and "Traceback" not in done.stderr, (args, done.stderr)
        assert done.stderr.startswith("error:"), done.stderr
    assert net_cmd(twin, "faults", "--all", "--json").stdout == before


def test_no_twin_or_a_loopback_twin_is_refused(tmp_path: Path) -> None:
    done = subprocess.run([TWIN, "net", "fault", "cut", "gpu001", "--run-dir", str(tmp_path / "none")],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 2 and "no twin running" in done.stderr, done.stderr
    with Twin.up("mini", run_dir=tmp_path / "loop", timeout=60) as loop:
        done = subprocess.run([TWIN, "net", "fault", "cut", "gpu001", "--run-dir", str(loop.run.path)],
                              capture_output=True, text=True, timeout=30)
    assert done.returncode == 2 and "loopback" in done.stderr and "--network netns" in done.stderr, done.stderr
