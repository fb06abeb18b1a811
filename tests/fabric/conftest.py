"""Fabric tests run the real ibsim, OpenSM and infiniband-diags: they need those tools, and root
(umad2sim and OpenSM are exercised as CI runs them). The pure netfile/model tests need neither."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from emulator.procutil import pid_alive
from emulator.topology import load_topology
from services.fabric.netfile import FabricPlan, make_fabric_plan
from services.fabric.subnet import APT_PACKAGES, Subnet, missing_tools
from tests.conftest import skip_reason

REASON = skip_reason("fabric tests (OpenSM over ibsim)", missing_tools(), list(APT_PACKAGES))

needs_subnet = pytest.mark.skipif(bool(REASON), reason=REASON or "n/a")


@pytest.fixture(scope="module")
def rack_plan() -> FabricPlan:
    return make_fabric_plan(load_topology("rack"))


@pytest.fixture(scope="module")
def rack_subnet(rack_plan: FabricPlan, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Subnet]:
    if REASON:
        pytest.skip(REASON)
    subnet = Subnet(rack_plan, Path(tmp_path_factory.mktemp("fabric-rack")))
    subnet.start(timeout=30)
    pids = subnet.pids
    try:
        yield subnet
    finally:
        subnet.stop()
        left = [p for p in pids if pid_alive(p)]
        assert not left, f"ibsim/OpenSM left running after stop: {left}"
