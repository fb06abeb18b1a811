"""Start and stop: the mini fabric comes up, and nothing is left behind (processes, umad2sim's
fake sysfs directories); a simulator that cannot start is reported with its log."""

from __future__ import annotations

from pathlib import Path

import pytest

from emulator.procutil import pid_alive
from emulator.topology import load_topology
from services.fabric.netfile import make_fabric_plan
from services.fabric.subnet import Subnet, SubnetError
from tests.fabric.conftest import needs_subnet


@needs_subnet
def test_mini_up_and_clean_stop(tmp_path: Path) -> None:
    plan = make_fabric_plan(load_topology("mini"))
    subnet = Subnet(plan, tmp_path)
    subnet.start(timeout=30)
    pids = subnet.pids
    try:
        assert len(pids) == 2 and all(pid_alive(p) for p in pids)
        state = subnet.snapshot()
        assert len(state.ca_ports()) == 16 and all(p.active and p.lid for p in state.ca_ports())
        assert subnet.sweeps() >= 1
        assert "ftree tables configured on all switches" in subnet.osm_log.read_text()
    finally:
        subnet.stop()
    assert not [p for p in pids if pid_alive(p)]
    assert not list(subnet.work.glob("sys-*"))
    subnet.stop()  # idempotent


@needs_subnet
def test_socket_clash_is_reported_and_leaves_nothing(tmp_path: Path) -> None:
    plan = make_fabric_plan(load_topology("mini"))
    with Subnet(plan, tmp_path / "a") as first:
        first.start(timeout=30)
        second = Subnet(plan, tmp_path / "b", sockname=first.sockname)
        with pytest.raises(SubnetError, match="already in use"):
            second.start(timeout=10)
        assert second.pids == []
        assert first.snapshot().ca_ports()  # the first fabric is unharmed
