"""Real packets on the rack topology: rails, plane isolation, faults and their clearing."""

from __future__ import annotations

import pytest

from emulator.network import Network, NetworkError
from tests.network.conftest import reachable

GPUS = ["gpu001", "gpu002", "gpu003", "gpu004"]


def rails(net: Network, dst: str, only: range = range(8)) -> list[tuple[str, str]]:
    return [(f"rail{r}", a) for r, a in enumerate(net.rail_addresses(dst)) if r in only]


def test_every_rail_reaches_both_ways(rack_net: Network) -> None:
    for src, dst in (("gpu001", "gpu004"), ("gpu004", "gpu001")):
        got = reachable(rack_net, src, rails(rack_net, dst))
        assert all(got.values()), f"{src} -> {dst}: {got}"


def test_ethernet_segments_and_oob_reach_within_their_plane(rack_net: Network) -> None:
    n = rack_net
    assert all(reachable(n, "gpu001", [(None, n.address("gpu004", "storage")), (None, n.address("oss01", "storage")),
                                       (None, n.address("ceph12", "storage")),
                                       (None, n.address("gpu004", "business")),
                                       (None, n.address("k8s-cp01", "business")),
                                       (None, n.address("gpu004", "oob")), (None, n.address("pdu-r01-2", "oob"))],
                         ).values())
    assert all(reachable(n, "mds01", [(None, n.address("ceph01", "storage"))]).values())


def test_oob_cannot_reach_data_planes_even_when_it_tries(rack_net: Network) -> None:
    n = rack_net
    data = [n.address("gpu004", p) for p in ("compute", "storage", "business")] + [n.address("oss01", "storage")]
    # A PDU lives on the OOB plane only; give it routes pointing every data prefix at its OOB wire
    # and a neighbour entry with gpu004's OOB MAC, so packets really go out on the OOB bridges.
    mac = n.exec("gpu004", ["cat", "/sys/class/net/oob0/address"]).stdout.strip()
    added = []
    try:
        for addr in data:
            assert n.exec("pdu-r01-1", ["ip", "route", "add", f"{addr}/32", "dev", "oob0"]).returncode == 0
            n.exec("pdu-r01-1", ["ip", "neigh", "replace", addr, "lladdr", mac, "dev", "oob0"])
            added.append(addr)
        got = reachable(n, "pdu-r01-1", [(None, a) for a in data])
        assert not any(got.values()), f"OOB reached a data plane: {got}"
        assert all(reachable(n, "pdu-r01-1", [(None, n.address("gpu004", "oob"))]).values())
    finally:
        for addr in added:
            n.exec("pdu-r01-1", ["ip", "route", "del", f"{addr}/32"])
            n.exec("pdu-r01-1", ["ip", "neigh", "del", addr, "dev", "oob0"])


def test_data_planes_cannot_reach_oob(rack_net: Network) -> None:
    n = rack_net
    oob = [n.address(h, "oob") for h in ("gpu004", "mds01", "pdu-r01-1")]
    # Out of a rail, a storage and a business interface, forced past the host's own routes.
    for dev, via in (("rail0", "10.100.255.1"), ("storage", None), ("business", None)):
        gw = via or n.exec("gpu001", ["ip", "-4", "route", "show", "dev", dev]).stdout.split("via ")[1].split()[0]
        try:
            for addr in oob:
                n.exec("gpu001", ["ip", "route", "add", f"{addr}/32", "via", gw, "dev", dev, "onlink"])
            got = reachable(n, "gpu001", [(dev, a) for a in oob])
            assert not any(got.values()), f"{dev} reached the OOB plane: {got}"
        finally:
            for addr in oob:
                n.exec("gpu001", ["ip", "route", "del", f"{addr}/32"])
    # And a compute router has no way there at all.
    assert not any(reachable(n, "ib-leaf01", [(None, a) for a in oob]).values())


def test_storage_and_business_segments_are_isolated(rack_net: Network) -> None:
    n = rack_net
    business = [n.address(h, "business") for h in ("gpu002", "k8s-cp01")]
    storage = [n.address(h, "storage") for h in ("gpu002", "oss01")]
    # mds01 is on the storage segment only; k8s-cp01 on the business segment only. Each points
    # the other segment's addresses at its own leaf: the leaf (a VRF) has no route there.
    for host, own, foreign in (("mds01", "storage", business), ("k8s-cp01", "business", storage)):
        gw = n.exec(host, ["ip", "-4", "route", "show", "dev", own]).stdout.split("via ")[1].split()[0]
        try:
            for addr in foreign:
                n.exec(host, ["ip", "route", "add", f"{addr}/32", "via", gw, "dev", own, "onlink"])
            got = reachable(n, host, [(None, a) for a in foreign])
            assert not any(got.values()), f"{host} crossed from {own} into the other segment: {got}"
        finally:
            for addr in foreign:
                n.exec(host, ["ip", "route", "del", f"{addr}/32"])
    # A GPU server sits on both segments, but sends nothing from one into the other.
    got = reachable(n, "gpu001", [("storage", business[1]), ("business", storage[1])])
    assert not any(got.values()), got


def test_leaf_spine_link_down_keeps_every_pair_connected(rack_net: Network) -> None:
    n = rack_net
    fault = n.link_down("ib-leaf01", "ib-spine01")   # its time (target 1 s) is in the bench
    try:
        assert fault.kind == "link-down" and fault.id and fault.time > 0
        routes = n.exec("ib-leaf01", ["ip", "route"]).stdout
        assert "ib-spine01" not in routes and "ib-spine02" in routes
        for src in GPUS:
            for dst in GPUS:
                if src != dst:
                    got = reachable(n, src, rails(n, dst), tries=2)
                    assert all(got.values()), f"{src} -> {dst} with a leaf-spine link down: {got}"
    finally:
        cleared = n.link_up("ib-leaf01", "ib-spine01")
    assert [f.id for f in cleared] == [fault.id]
    assert "ib-spine01" in n.exec("ib-leaf01", ["ip", "route"]).stdout


def test_one_of_parallel_links_down(rack_net: Network) -> None:
    n = rack_net
    fault = n.link_down("ib-leaf02", "ib-spine02", index=3)
    try:
        assert fault.target == "ib-leaf02:ib-spine02:3"
        group = n.exec("ib-leaf02", ["ip", "route", "show", "10.100.0.4"]).stdout
        assert "ib-spine02-3" not in group and "ib-spine02-2" in group
        assert all(reachable(n, "gpu001", rails(n, "gpu003"), tries=2).values())
    finally:
        n.clear(fault.id)
    assert "ib-spine02-3" in n.exec("ib-leaf02", ["ip", "route", "show", "10.100.0.4"]).stdout


def test_leaf_down_keeps_the_rails_on_the_other_leaf(rack_net: Network) -> None:
    n = rack_net
    fault = n.switch_down("ib-leaf01")
    try:
        assert fault.kind == "switch-down" and fault.target == "ib-leaf01"
        got = reachable(n, "gpu001", rails(n, "gpu004"), tries=2)
        assert all(ok for key, ok in got.items() if key.split()[0] in {f"rail{r}" for r in range(4, 8)}), got
        assert not any(ok for key, ok in got.items() if key.split()[0] in {f"rail{r}" for r in range(4)}), got
    finally:
        n.switch_up("ib-leaf01")
    assert all(reachable(n, "gpu001", rails(n, "gpu004"), tries=3).values())


def test_loss_on_a_link_is_seen_and_cleared(rack_net: Network) -> None:
    n = rack_net
    dst = n.rail_addresses("gpu002")[0]
    fault = n.set_loss("gpu001", "ib-leaf01", 50)
    try:
        assert fault is not None and fault.kind == "loss" and fault.detail["percent"] == 50
        out = n.exec("gpu001", ["ping", "-n", "-q", "-c", "100", "-i", "0.01", "-W", "1", "-I", "rail0", dst],
                     timeout=30).stdout
        received = int(out.split(" received")[0].split()[-1])
        # 50 % each way: a round trip survives with p = 0.25; 100 pings -> 25 +- 4.3.
        assert 5 <= received <= 50, out
    finally:
        assert n.set_loss("gpu001", "ib-leaf01", 0) is None
    assert not n.faults()
    out = n.exec("gpu001", ["ping", "-n", "-q", "-c", "20", "-i", "0.01", "-W", "1", "-I", "rail0", dst]).stdout
    assert " 20 received" in out, out


def test_partition_and_heal(rack_net: Network) -> None:
    n = rack_net
    targets = [(None, n.address("gpu004", p)) for p in ("oob", "storage", "business")] + rails(n, "gpu004", range(1))
    fault = n.partition(["gpu001", "gpu002"], ["gpu004"])
    try:
        assert fault.kind == "partition"
        assert not any(reachable(n, "gpu001", targets).values())
        assert all(reachable(n, "gpu001", rails(n, "gpu003", range(1))).values())
    finally:
        healed = n.heal()
    assert [f.id for f in healed] == [fault.id]
    assert all(reachable(n, "gpu001", targets).values())


def test_cut_off_a_node(rack_net: Network) -> None:
    n = rack_net
    fault = n.cut_off("gpu003")
    try:
        assert not any(reachable(n, "gpu001", [(None, n.address("gpu003", "oob"))] + rails(n, "gpu003", range(1)))
                       .values())
    finally:
        n.reconnect("gpu003")
    assert fault.kind == "node-cut"
    assert all(reachable(n, "gpu001", [(None, n.address("gpu003", "oob"))] + rails(n, "gpu003"), tries=3).values())


def test_bad_input_is_a_clear_error_and_changes_nothing(rack_net: Network) -> None:
    n = rack_net
    before = n.exec("ib-leaf01", ["ip", "route"]).stdout
    with pytest.raises(NetworkError, match="no host 'gpu999'"):
        n.address("gpu999", "compute")
    with pytest.raises(NetworkError, match="no address on plane 'business'"):
        n.address("mds01", "business")
    with pytest.raises(NetworkError, match="no host or switch namespace 'nope'"):
        n.exec("nope", ["true"])
    with pytest.raises(NetworkError, match="no link between 'gpu001' and 'ib-spine01'"):
        n.link_down("gpu001", "ib-spine01")
    with pytest.raises(NetworkError, match="no host or switch 'ib-leaf09'"):
        n.link_down("ib-leaf09", "ib-spine01")
    with pytest.raises(NetworkError, match="no link 9 between"):
        n.link_down("ib-leaf01", "ib-spine01", index=9)
    with pytest.raises(NetworkError, match="no switch 'gpu001'"):
        n.switch_down("gpu001")
    with pytest.raises(NetworkError, match="no host 'ghost'"):
        n.partition(["gpu001"], ["ghost"])
    with pytest.raises(NetworkError, match="between 0 and 100"):
        n.set_loss("gpu001", "ib-leaf01", 150)
    with pytest.raises(NetworkError, match="no active network fault"):
        n.clear("net-999")
    assert n.exec("ib-leaf01", ["ip", "route"]).stdout == before
    assert not n.faults()


def test_show_says_what_is_emulated_and_how(rack_net: Network) -> None:
    info = rack_net.show()
    assert set(info["planes"]) == {"compute", "storage", "business", "oob"}
    for plane in info["planes"].values():
        assert plane["latency"].startswith("modelled, not emulated")
        assert "nftables" in plane["loss"]
        assert plane["bandwidth"].startswith("off")
    assert "namespace per VRF" in info["planes"]["storage"]["isolation"]
    assert info["planes"]["compute"]["routers"] == 4
    assert info["namespaces"] == len(rack_net.namespaces)
