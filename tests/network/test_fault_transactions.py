"""Issue 13 cases 3 and 4 on `rack --fabric --network netns`: a network fault is applied to every
plane (compute veths, the InfiniBand fabric and OpenSM's routes, the fault log) or to none, and
`twin net fault clear ID` undoes any fault kind down to the kernel state it changed."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from emulator.client import Twin
from emulator.network import Network
from tests.fabric.conftest import REASON as FABRIC_REASON

TWIN = str(Path(sys.executable).parent / "twin")

pytestmark = pytest.mark.skipif(bool(FABRIC_REASON), reason=FABRIC_REASON or "n/a")


@pytest.fixture(scope="module")
def twin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Twin]:
    with Twin.up("rack", run_dir=tmp_path_factory.mktemp("fault-tx"), network="netns", fabric=True,
                 timeout=120) as t:
        yield t


@pytest.fixture(scope="module")
def net(twin: Twin) -> Network:
    return Network.attach(twin.run.network)


def twin_cmd(twin: Twin, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([TWIN, *args, "--run-dir", str(twin.run.path)], capture_output=True, text=True,
                          timeout=120)


def active_faults(twin: Twin, include_cleared: bool = False) -> list[dict[str, Any]]:
    done = twin_cmd(twin, "net", "faults", "--json", *(["--all"] if include_cleared else []))
    assert done.returncode == 0, done.stderr
    return list(json.loads(done.stdout))


def fabric_health(twin: Twin) -> dict[str, Any]:
    done = twin_cmd(twin, "fabric", "health", "--json")
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def down_fabric_ports(twin: Twin) -> set[tuple[str, int]]:
    return {(p["node"], p["number"]) for p in fabric_health(twin).get("down_ports", [])}


def veth_ends(net: Network, link_ids: list[str]) -> list[tuple[str, str]]:
    """(namespace label, ifname) of both ends of every wire of these links."""
    by_id = {lk.id: lk for lk in net.plan.links}
    wires = [net.plan.wires[w] for lid in link_ids for w in by_id[lid].wires]
    return [(e.ns, e.ifname) for w in wires for e in (w.a, w.b)]


def admin_up(net: Network, label: str, ifname: str) -> bool:
    out = net.exec(label, ["ip", "-o", "link", "show", "dev", ifname]).stdout
    flags = re.search(r"<([^>]*)>", out)
    assert flags, out
    return "UP" in flags.group(1).split(",")


def kernel_state(net: Network, nodes: list[str]) -> dict[str, tuple[str, ...]]:
    """What a fault can change in these nodes' namespaces (an Ethernet switch has one per segment):
    interface admin state, routes (nexthop ids left out: a reinstalled route may get a new one),
    nftables rules."""
    state = {}
    for label in (label for node in nodes for label in net.plan.nodes[node]):
        links = net.exec(label, ["ip", "-o", "link", "show"]).stdout
        ups = sorted(f"{m.group(1)} {'UP' in m.group(2).split(',')}"
                     for m in re.finditer(r"^\d+: ([^:@]+)[^<]*<([^>]*)>", links, re.M))
        routes = net.exec(label, ["ip", "-4", "route", "show"]).stdout
        routes = sorted(re.sub(r"\s+", " ", re.sub(r"nhid \d+ ", "", line)).strip() for line in routes.splitlines())
        rules = net.exec(label, ["nft", "list", "ruleset"]).stdout
        state[label] = (*ups, "--", *routes, "--", *sorted(line.strip() for line in rules.splitlines()))
    return state


def test_all_eight_cables_of_a_leaf_spine_pair_go_down_on_every_plane(twin: Twin, net: Network) -> None:
    """Issue 13 case 3: this failed after 7 of 8 cables (`ibroute -n 1 failed (255)`: no HCA under
    ib-leaf01 reaches ib-spine01 by LID once every cable between them is down)."""
    links = [lk.id for lk in net.plan.links_between("ib-leaf01", "ib-spine01")]
    assert len(links) == 8
    done = twin_cmd(twin, "net", "fault", "link-down", "ib-leaf01", "ib-spine01")
    assert done.returncode == 0, done.stderr + done.stdout
    try:
        # The network: every veth of the 8 cables down, one fault naming all 8.
        ends = veth_ends(net, links)
        assert not any(admin_up(net, ns, ifname) for ns, ifname in ends)
        (fault,) = active_faults(twin)
        assert fault["kind"] == "link-down" and sorted(fault["detail"]["links"]) == sorted(links)
        # The fabric: the 8 cables disabled, both ends of each (16 ports) down, and nothing else.
        down = down_fabric_ports(twin)
        assert len(down) == 16 and {n for n, _ in down} == {"ib-leaf01", "ib-spine01"}
        assert fabric_health(twin)["sm_state"] == "MASTER"
    finally:
        cleared = twin_cmd(twin, "net", "fault", "clear", fault["id"])
    assert cleared.returncode == 0, cleared.stderr
    assert active_faults(twin) == []
    assert down_fabric_ports(twin) == set()
    assert all(admin_up(net, ns, ifname) for ns, ifname in ends)


def test_a_step_that_fails_half_way_is_rolled_back_on_every_plane(twin: Twin, net: Network) -> None:
    """A forced, real failure mid-way: with every cable between ib-leaf01 and ib-spine01 down,
    also cutting ib-leaf02 from ib-spine02 splits the fabric in two, and no host's diags can read
    the other half's forwarding tables back. By then the veths are down and ibsim has unlinked
    the cables: both are undone, no fault is logged, and the error names the step."""
    first = twin_cmd(twin, "net", "fault", "link-down", "ib-leaf01", "ib-spine01")
    assert first.returncode == 0, first.stderr
    try:
        (kept,) = active_faults(twin)
        labels = ["ib-leaf01", "ib-leaf02", "ib-spine01", "ib-spine02"]
        before = kernel_state(net, labels)
        fabric_before = down_fabric_ports(twin)
        log_before = active_faults(twin, include_cleared=True)

        done = twin_cmd(twin, "net", "fault", "link-down", "ib-leaf02", "ib-spine02")
        assert done.returncode == 1, done.stdout
        message = " ".join(done.stderr.split())
        assert "fabric: read back the port states and LFTs failed" in message, message
        assert "rolled back, nothing changed" in message, message

        assert active_faults(twin, include_cleared=True) == log_before   # no fault, not even a cleared one
        assert down_fabric_ports(twin) == fabric_before
        assert kernel_state(net, labels) == before
        links = [lk.id for lk in net.plan.links_between("ib-leaf02", "ib-spine02")]
        assert all(admin_up(net, ns, ifname) for ns, ifname in veth_ends(net, links))
    finally:
        assert twin_cmd(twin, "net", "fault", "clear", kept["id"]).returncode == 0
    assert down_fabric_ports(twin) == set() and active_faults(twin) == []


# Case 4: every fault kind, injected and cleared by id; the kernel state it changed is back.
FAULTS = {
    "link-down": (["link-down", "eth-leaf01", "eth-spine01", "--index", "2"], ["eth-leaf01", "eth-spine01"]),
    "compute-link-down": (["link-down", "ib-leaf02", "ib-spine01", "--index", "3"],
                          ["ib-leaf02", "ib-spine01"]),
    "loss": (["loss", "ib-leaf01", "ib-spine02", "--percent", "20"], ["ib-leaf01", "ib-spine02"]),
    "storage-loss": (["loss", "gpu002", "eth-leaf01", "--percent", "5"], ["gpu002", "eth-leaf01"]),
    "switch-down": (["switch-down", "eth-leaf02"], ["eth-leaf02", "eth-spine01", "gpu003"]),
    "node-cut": (["cut", "gpu003"], ["gpu003", "ib-leaf01", "ib-leaf02", "eth-leaf02"]),
    "partition": (["partition", "--a", "gpu001", "--b", "gpu002,gpu003"], ["gpu001", "gpu002", "gpu003"]),
}


@pytest.mark.parametrize("name", list(FAULTS))
def test_clear_by_id_undoes_every_fault_kind(twin: Twin, net: Network, name: str) -> None:
    args, labels = FAULTS[name]
    before = kernel_state(net, labels)
    fabric_before = down_fabric_ports(twin)
    done = twin_cmd(twin, "net", "fault", *args)
    assert done.returncode == 0, done.stderr
    (fault,) = active_faults(twin)
    assert kernel_state(net, labels) != before   # the fault did change the kernel
    cleared = twin_cmd(twin, "net", "fault", "clear", fault["id"])
    assert cleared.returncode == 0, cleared.stderr
    assert "nothing changed" not in cleared.stdout and fault["id"] in cleared.stdout
    assert active_faults(twin) == []
    assert kernel_state(net, labels) == before
    assert down_fabric_ports(twin) == fabric_before

    again = twin_cmd(twin, "net", "fault", "clear", fault["id"])   # nothing left to clear: an error
    assert again.returncode != 0 and "cleared already" in " ".join(again.stderr.split())


def test_a_compute_cable_flaps_in_the_fabric_too(twin: Twin, net: Network) -> None:
    """`flap` on a compute cable takes it down and up in ibsim as well (OpenSM re-sweeps each
    time), not only its veth; it ends up everywhere, with every flap in the fault log."""
    sweeps = fabric_health(twin).get("sweeps", 0)
    logged = len(active_faults(twin, include_cleared=True))
    done = twin_cmd(twin, "net", "fault", "flap", "ib-leaf02", "ib-spine02", "--index", "1",
                    "--times", "2", "--period", "0.4")
    assert done.returncode == 0, done.stderr
    assert fabric_health(twin).get("sweeps", 0) >= sweeps + 4
    assert down_fabric_ports(twin) == set() and active_faults(twin) == []
    assert len(active_faults(twin, include_cleared=True)) == logged + 2
    (link,) = [lk.id for lk in net.plan.links_between("ib-leaf02", "ib-spine02") if lk.index == 1]
    assert all(admin_up(net, ns, ifname) for ns, ifname in veth_ends(net, [link]))
