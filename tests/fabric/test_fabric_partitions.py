"""Partitions: validation and partitions.conf (pure), then OpenSM applying them on the rack fabric
and the ports' P_Key tables read back with smpquery."""

from __future__ import annotations

import pytest

from services.fabric.diags import DiagParseError, parse_pkeys
from services.fabric.netfile import FabricPlan
from services.fabric.partitions import (
    DEFAULT_PARTITION,
    FULL,
    LIMITED,
    Partition,
    PartitionError,
    render_partitions_conf,
    validate_partitions,
    with_partition,
    without_partition,
)
from services.fabric.subnet import Subnet

GUIDS = {0xB83FD20000000011, 0xB83FD20000000021, 0xB83FD20000000031}
A, B, C = sorted(GUIDS)


def test_render_default_first_then_members() -> None:
    parts = validate_partitions([Partition("storage", 0x2, [(A, FULL), (B, LIMITED)], ipoib=True),
                                 Partition("empty", 0x7FFE)], GUIDS)
    assert parts[0] == DEFAULT_PARTITION
    lines = render_partitions_conf(parts).splitlines()
    assert lines[1:] == ["Default=0x7fff, ipoib : ALL=full ;",
                         f"storage=0x0002, ipoib : {A:#018x}=full, {B:#018x}=limited ;",
                         "empty=0x7ffe : ;"]
    assert render_partitions_conf([]).splitlines()[1:] == ["Default=0x7fff, ipoib : ALL=full ;"]


@pytest.mark.parametrize(("bad", "message"), [
    (Partition("p", 0x0000), "out of range"),
    (Partition("p", 0x7FFF), "default partition"),
    (Partition("p", 0x8002), "full-member bit"),
    (Partition("p", 0x10000), "out of range"),
    (Partition("has space", 0x2), "partition name"),
    (Partition("p;x", 0x2), "partition name"),
    (Partition("Default", 0x2), "cannot be changed"),
    (Partition("p", 0x2, [(0x1234, FULL)]), "not a port of this fabric"),
    (Partition("p", 0x2, [(A, "both")]), "membership 'both'"),
    (Partition("p", 0x2, [(A, FULL), (A, LIMITED)]), "listed twice"),
])
def test_bad_partition_is_refused(bad: Partition, message: str) -> None:
    with pytest.raises(PartitionError, match=message):
        validate_partitions([bad], GUIDS)


def test_duplicates_and_default_cannot_go() -> None:
    one = Partition("storage", 0x2, [(A, FULL)])
    with pytest.raises(PartitionError, match="used twice"):
        validate_partitions([one, Partition("storage", 0x3)], GUIDS)
    with pytest.raises(PartitionError, match="already 'storage'"):
        with_partition([one], Partition("other", 0x2), GUIDS)
    with pytest.raises(PartitionError, match="cannot be deleted"):
        without_partition([DEFAULT_PARTITION, one], "Default")
    with pytest.raises(PartitionError, match="no partition named"):
        without_partition([one], "nope")
    assert without_partition([DEFAULT_PARTITION, one], "storage") == [DEFAULT_PARTITION]
    assert validate_partitions([DEFAULT_PARTITION, one], GUIDS) == [DEFAULT_PARTITION, one]


def test_partition_reaches_the_p_key_tables_and_goes(rack_subnet: Subnet, rack_plan: FabricPlan) -> None:
    a, b, c = rack_plan.hca("gpu001", 0), rack_plan.hca("gpu002", 1), rack_plan.hca("gpu003", 4)
    default = (0x7FFF, True)
    assert rack_subnet.pkeys(a.id) == [default]
    part = Partition("storage", 0x2, [(a.port_guid(1), FULL), (b.port_guid(1), LIMITED)], ipoib=True)
    rack_subnet.set_partitions([part])   # returns after OpenSM's sweep (bounded: 10 s); its time is in the bench
    try:
        assert rack_subnet.pkeys(a.id) == [default, (0x2, True)]  # 0x8002 in the table
        assert rack_subnet.pkeys(b.id) == [default, (0x2, False)]
        assert rack_subnet.pkeys(c.id) == [default]
        leaf, port = rack_plan.peer(a.id, 1) or ("", 0)
        assert rack_subnet.pkeys(leaf, port) == [default, (0x2, True)]  # enforced at the switch port too
        assert rack_subnet.partition_list == [part]
        conf = rack_subnet.partitions.read_text()
        with pytest.raises(PartitionError, match="not a port of this fabric"):
            rack_subnet.set_partitions([part, Partition("bad", 0x3, [(0x1234, FULL)])])
        with pytest.raises(PartitionError, match="already 'storage'"):
            rack_subnet.set_partitions([part, Partition("again", 0x2)])
        assert rack_subnet.partitions.read_text() == conf and rack_subnet.partition_list == [part]
    finally:
        rack_subnet.set_partitions([])
    assert rack_subnet.pkeys(a.id) == [default] and rack_subnet.pkeys(b.id) == [default]
    assert rack_subnet.partition_list == []


def test_parse_pkeys() -> None:
    rows = "\n".join(f"{i:4d}: " + " ".join(["0x0000"] * 8) for i in range(8, 64, 8))
    text = f"   0: 0xffff 0x8002 0x0003 0x0000 0x0000 0x0000 0x0000 0x0000\n{rows}\n64 pkeys capacity for this port\n"
    assert parse_pkeys(text) == [(0x7FFF, True), (0x2, True), (0x3, False)]
    with pytest.raises(DiagParseError, match="no P_Key table"):
        parse_pkeys("")
    with pytest.raises(DiagParseError, match="not understood"):
        parse_pkeys(text + "ibwarn: something\n")
