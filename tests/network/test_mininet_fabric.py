"""`--network mininet` with the fabric manager: OpenSM's routes are the compute plane's, and Mininet's
`configLinkStatus` on a compute cable goes through the fabric manager (issue 17)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from emulator.client import Twin
from emulator.network.mininet import attach
from tests.conftest import netns_lock
from tests.fabric.conftest import REASON as FABRIC_REASON

pytestmark = pytest.mark.skipif(bool(FABRIC_REASON), reason=FABRIC_REASON or "n/a")


@pytest.fixture
def fabric_twin(tmp_path: Path) -> Iterator[Twin]:
    with netns_lock():
        with Twin.up("rack", run_dir=tmp_path / "t", network="mininet", fabric=True, timeout=180) as twin:
            yield twin


def route_devices(out: str) -> set[str]:
    return set(re.findall(r"\bdev (\S+)", out))


def test_config_link_status_goes_through_the_fabric_manager(fabric_twin: Twin) -> None:
    net = attach(fabric_twin.run.path)
    try:
        leaf = net["ib-leaf01"]
        # OpenSM's LFTs are the routes: one nexthop per destination, no shortest-path ECMP groups
        assert "group" not in leaf.cmd("ip nexthop show")
        assert any(d.startswith("ib-spine01-") for d in route_devices(leaf.cmd("ip -4 route show")))

        net.configLinkStatus("ib-leaf01", "ib-spine01", "down")
        (fault,) = fabric_twin.faults().list(subsystem="network")
        assert fault.kind == "link-down" and "OpenSM re-swept" in fault.effect and "in the fabric" in fault.effect
        assert [f.kind for f in fabric_twin.network().faults()] == ["link-down"]   # the plane's own log follows
        assert not any(d.startswith("ib-spine01-") for d in route_devices(leaf.cmd("ip -4 route show")))
        assert net.pingAll(timeout=1) == 0

        net.configLinkStatus("ib-leaf01", "ib-spine01", "up")
        assert fabric_twin.faults().list(subsystem="network") == []
        assert fabric_twin.network().faults() == []
    finally:
        net.stop()
