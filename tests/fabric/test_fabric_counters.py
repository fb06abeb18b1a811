"""Port counters: perfquery's output parsed (pure), then set in ibsim, read and cleared on the rack."""

from __future__ import annotations

import pytest

from services.fabric.counters import CounterError, CounterParseError, check_settable, parse_perfquery
from services.fabric.netfile import FabricPlan
from services.fabric.subnet import Subnet, SubnetError

PERFQUERY = """# Port counters: Lid 28 port 1 (CapMask: 0x1200)
PortSelect:......................1
CounterSelect:...................0x0000
SymbolErrorCounter:..............7
LinkErrorRecoveryCounter:........0
LinkDownedCounter:...............2
PortRcvErrors:...................0
PortRcvRemotePhysicalErrors:.....0
PortRcvSwitchRelayErrors:........0
PortXmitDiscards:................0
PortXmitConstraintErrors:........0
PortRcvConstraintErrors:.........0
CounterSelect2:..................0x00
LocalLinkIntegrityErrors:........0
ExcessiveBufferOverrunErrors:....0
QP1Dropped:......................0
VL15Dropped:.....................0
PortXmitData:....................1368
PortRcvData:.....................1440
PortXmitPkts:....................19
PortRcvPkts:.....................20
PortXmitWait:....................0
"""


def test_parse_perfquery() -> None:
    c = parse_perfquery(PERFQUERY)
    assert c["SymbolErrorCounter"] == 7 and c["LinkDownedCounter"] == 2 and c["PortXmitData"] == 1368
    assert "PortSelect" not in c and "CounterSelect2" not in c and len(c) == 18
    with pytest.raises(CounterParseError, match="not understood"):
        parse_perfquery(PERFQUERY + "garbage here\n")
    with pytest.raises(CounterParseError, match="no '# Port counters'"):
        parse_perfquery("")
    with pytest.raises(CounterParseError, match="lacks SymbolErrorCounter"):
        parse_perfquery(PERFQUERY.replace("SymbolErrorCounter:..............7\n", ""))


def test_check_settable() -> None:
    check_settable("SymbolErrorCounter", 65535)
    with pytest.raises(CounterError, match="16-bit"):
        check_settable("SymbolErrorCounter", 65536)
    with pytest.raises(CounterError, match="4-bit"):
        check_settable("LocalLinkIntegrityErrors", 16)
    with pytest.raises(CounterError, match="cannot be set"):
        check_settable("QP1Dropped", 1)


def test_set_read_and_clear_counters(rack_subnet: Subnet, rack_plan: FabricPlan) -> None:
    hca = rack_plan.hca("gpu001", 1).id
    first = rack_subnet.port_counters(hca, 1)
    assert first["SymbolErrorCounter"] == 0 and first["PortRcvPkts"] > 0  # ibsim counts the MADs
    rack_subnet.set_counter(hca, 1, "SymbolErrorCounter", 42)
    rack_subnet.set_counter("ib-leaf01", 3, "PortRcvErrors", 9)
    assert rack_subnet.port_counters(hca, 1)["SymbolErrorCounter"] == 42
    leaf = rack_subnet.port_counters("ib-leaf01", 3)
    assert leaf["PortRcvErrors"] == 9 and leaf["SymbolErrorCounter"] == 0
    with pytest.raises(CounterError):
        rack_subnet.set_counter(hca, 1, "QP1Dropped", 1)
    with pytest.raises(KeyError, match="no port 2"):
        rack_subnet.set_counter(hca, 2, "SymbolErrorCounter", 1)
    rack_subnet.clear_counters(hca, 1)
    rack_subnet.clear_counters("ib-leaf01", 3)
    assert rack_subnet.port_counters(hca, 1)["SymbolErrorCounter"] == 0
    assert rack_subnet.port_counters("ib-leaf01", 3)["PortRcvErrors"] == 0


def test_link_down_counts_at_both_ends(rack_subnet: Subnet, rack_plan: FabricPlan) -> None:
    cable = rack_plan.cables_between("ib-leaf02", "ib-spine02")[-1]
    ends = (("ib-leaf02", cable.a_port), ("ib-spine02", cable.b_port))
    for end in ends:
        rack_subnet.clear_counters(*end)
    for _ in range(2):
        rack_subnet.link_down("ib-leaf02", cable.a_port)
        rack_subnet.link_up("ib-leaf02", cable.a_port)
    assert [rack_subnet.port_counters(*end)["LinkDownedCounter"] for end in ends] == [2, 2]


def test_ibsim_refusal_is_reported(rack_subnet: Subnet) -> None:
    with pytest.raises(SubnetError, match="ibsim refused"):
        rack_subnet._console('PerformanceSet "ib-leaf01"[1] PortCounters.Bogus=1', "has been set to", 5.0)
