"""The topology model: the seed's SU figures exactly, the small topologies, and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from emulator.topology import (
    MIG_LAYOUTS,
    GpuServerSpec,
    Topology,
    TopologyError,
    TopologyNotFound,
    load_topology,
)
from emulator.topology.load import TOPOLOGIES_DIR
from emulator.topology.schema import HGX_H100_PCI_BUS_IDS

BAD = Path(__file__).resolve().parents[1] / "data" / "topologies"


@pytest.fixture(scope="module")
def su() -> Topology:
    return load_topology("su-1024")


def test_su_1024_cluster_and_power(su: Topology) -> None:
    f = su.derive()
    assert (f.gpus, f.servers, f.racks, f.servers_per_rack) == (1024, 128, 32, 4)
    assert f.power.per_server_kw == 10.2
    assert f.power.per_rack_kw == pytest.approx(40.8)
    assert f.power.total_kw == pytest.approx(1305.6)
    assert f.power.total_mw == pytest.approx(1.3056)
    assert f.mig_servers == 8


def test_su_1024_compute_fabric(su: Topology) -> None:
    c = su.derive().compute
    assert (c.leaves, c.spines, c.leaf_pairs, c.servers_per_leaf_pair) == (32, 16, 16, 8)
    assert c.server_leaf_links == 1024
    assert c.leaf_spine_links == 32 * 32 == 1024
    assert (c.leaf_downlinks, c.leaf_uplinks) == (32, 32)
    assert (c.leaf_down_gbps, c.leaf_up_gbps) == (12800, 12800)
    assert c.oversubscription == "1:1"
    assert c.non_blocking is True
    assert c.bisection_tbps == pytest.approx(512 * 400 / 1000) == pytest.approx(204.8)
    assert (c.leaf_ports_used, c.leaf_radix) == (64, 64)
    assert (c.spine_ports_used, c.spine_radix) == (64, 64)
    assert c.sharp is True


def test_su_1024_other_planes_and_storage(su: Topology) -> None:
    f = su.derive()
    assert (f.ethernet.leaves, f.ethernet.spines) == (12, 8)
    assert f.ethernet.segments == ["storage", "business"]
    assert f.ethernet.host_ports <= f.ethernet.host_ports_available
    assert (f.oob.core_switches, f.oob.switches) == (2, 10)
    assert f.oob.endpoints <= f.oob.endpoint_ports
    assert f.switches == 32 + 16 + 12 + 8 + 10
    assert f.lustre is not None and f.ceph is not None
    assert (f.lustre.mds, f.lustre.oss, f.lustre.osts) == (2, 24, 96)
    assert f.lustre.raw_tb == pytest.approx(96 * 15.36)
    assert f.ceph.hosts >= 12 and f.ceph.ec_spare_host
    assert (f.ceph.ec_profile, f.ceph.ec_failure_domain) == ("8+3", "host")
    assert f.ceph.hdd_raw_tb == pytest.approx(16 * 12 * 20)
    assert f.ceph.ec_overhead == pytest.approx(1.375)
    assert f.ceph.ec_usable_tb == pytest.approx(3840 / 1.375, abs=1e-3)
    assert f.ceph.rbd_usable_tb == pytest.approx(f.ceph.ssd_raw_tb / 3, abs=1e-3)
    json.dumps(f.to_dict())  # JSON-ready


def test_su_1024_servers_racks_and_cabling(su: Topology) -> None:
    servers = su.gpu_servers
    assert [s.name for s in servers[:2]] + [servers[-1].name] == ["gpu001", "gpu002", "gpu128"]
    assert [s.index for s in servers] == list(range(128))
    assert [s.rack for s in servers[:5]] == ["r01"] * 4 + ["r02"]
    assert servers[-1].rack == "r32"
    # 8 servers (two racks) per leaf pair, pairs in order.
    assert servers[0].leaf_pair == servers[7].leaf_pair == ("ib-leaf01", "ib-leaf02")
    assert servers[8].leaf_pair == ("ib-leaf03", "ib-leaf04")
    assert servers[-1].leaf_pair == ("ib-leaf31", "ib-leaf32")
    per_leaf: dict[str, int] = {}
    for s in servers:
        for leaf in s.leaf_pair:
            per_leaf[leaf] = per_leaf.get(leaf, 0) + 4
    assert len(per_leaf) == 32 and set(per_leaf.values()) == {32}  # = the derived downlinks
    mig = [s.name for s in servers if s.mig_layout]
    assert mig == [f"gpu{i}" for i in range(121, 129)]
    assert {s.mig_layout for s in servers} == {None, "all-balanced"}
    assert su.management_nodes == ["k8s-cp01", "k8s-cp02", "k8s-cp03", "slurmctld01", "ufm01", "mgmt01"]


def test_gpu_server_spec_fields_and_dict(su: Topology) -> None:
    s = su.gpu_servers[0]
    assert isinstance(s, GpuServerSpec)
    d = s.to_dict()
    assert list(d) == [
        "name",
        "index",
        "rack",
        "leaf_pair",
        "mig_layout",
        "pci_bus_ids",
        "driver_version",
        "cuda_version",
        "gpu_count",
    ]
    assert d == json.loads(json.dumps(d))
    # the HGX/DGX H100 board's bus ids, GPU 0 on 18:00.0 and GPU 7 on DB:00.0
    assert d["pci_bus_ids"] == HGX_H100_PCI_BUS_IDS and len(set(HGX_H100_PCI_BUS_IDS)) == 8
    assert (HGX_H100_PCI_BUS_IDS[0], HGX_H100_PCI_BUS_IDS[-1]) == ("00000000:18:00.0", "00000000:DB:00.0")
    assert (d["driver_version"], d["cuda_version"], d["gpu_count"]) == ("550.90.07", "12.4", 8)
    with pytest.raises(AttributeError):
        s.name = "other"  # type: ignore[misc]


@pytest.mark.parametrize(("name", "servers", "gpus", "racks"), [("rack", 4, 32, 1), ("mini", 2, 16, 1)])
def test_small_topologies(name: str, servers: int, gpus: int, racks: int) -> None:
    topo = load_topology(name)
    f = topo.derive()
    assert (topo.name, f.servers, f.gpus, f.racks) == (name, servers, gpus, racks)
    assert f.compute.non_blocking and f.compute.oversubscription == "1:1"
    assert f.ceph is not None and f.ceph.hosts >= 11  # EC 8+3 over hosts is placeable
    assert f.lustre is not None and f.lustre.mds == 2
    assert topo.gpu_servers[-1].mig_layout == "all-balanced"
    assert topo.gpu_servers[0].mig_layout is None
    assert all(s.leaf_pair == ("ib-leaf01", "ib-leaf02") for s in topo.gpu_servers)
    assert topo.source == TOPOLOGIES_DIR / f"{name}.yaml"


def test_load_by_name_with_suffix_and_by_path() -> None:
    assert load_topology("mini.yaml").name == "mini"
    assert load_topology(TOPOLOGIES_DIR / "mini.yaml").name == "mini"
    assert load_topology(str(TOPOLOGIES_DIR / "rack.yaml")).name == "rack"


def test_mig_layouts_known() -> None:
    assert set(MIG_LAYOUTS) == {
        "all-disabled",
        "all-enabled",
        "all-1g.10gb",
        "all-2g.20gb",
        "all-3g.40gb",
        "all-balanced",
    }
    assert sorted(MIG_LAYOUTS["all-balanced"].instances) == ["1g.10gb", "1g.10gb", "2g.20gb", "3g.40gb"]
    assert MIG_LAYOUTS["all-enabled"].mig_enabled and not MIG_LAYOUTS["all-enabled"].instances


# (fixture, line, field path, words of the problem)
BAD_CASES = [
    ("syntax.yaml", 5, None, "invalid YAML"),
    ("unknown_field.yaml", 19, "compute.leaf_radx", "unknown field (allowed: technology"),
    ("wrong_type.yaml", 8, "servers.count", "must be a valid integer, got 'two'"),
    ("negative_count.yaml", 48, "ceph.hdd_per_host", "greater than or equal to 1, got -4"),
    ("odd_radix.yaml", 19, "compute.leaf_radix", "must be even, got 63"),
    ("partial_rack.yaml", 9, "servers.per_rack", "2 servers do not fill racks of 4"),
    ("blocking.yaml", 22, "compute.non_blocking", "8 downlinks and 4 uplinks"),
    ("leaf_ports.yaml", 19, "compute.leaves", "16 servers need 2 leaf pairs"),
    ("ec_hosts.yaml", 46, "ceph.ec", "EC 8+3 needs 11 hosts"),
    ("mig_layout.yaml", 15, "mig.layout", "unknown MIG layout 'all-7g.80gb' (known: all-disabled"),
    ("duplicate_name.yaml", 56, "management_nodes[1].name", "duplicate name 'k8s-cp01'"),
    ("duplicate_key.yaml", 10, "servers.count", "key given twice"),
]


@pytest.mark.parametrize(("fixture", "line", "field", "words"), BAD_CASES)
def test_bad_input_names_file_line_field(fixture: str, line: int, field: str | None, words: str) -> None:
    with pytest.raises(TopologyError) as caught:
        load_topology(BAD / fixture)
    first = str(caught.value).splitlines()[0]
    prefix = f"{fixture}:{line}: " + (f"{field}: " if field else "")
    assert prefix in first
    assert first.split(prefix, 1)[0].endswith("tests/data/topologies/")
    assert words in first
    assert isinstance(caught.value, ValueError)


def test_exact_message_shape(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(BAD.parents[2])
    with pytest.raises(TopologyError) as caught:
        load_topology("tests/data/topologies/odd_radix.yaml")
    assert str(caught.value) == (
        "tests/data/topologies/odd_radix.yaml:19: compute.leaf_radix: must be even, got 63"
    )


def test_every_problem_is_reported(tmp_path: Path) -> None:
    text = (TOPOLOGIES_DIR / "mini.yaml").read_text()
    bad = tmp_path / "two.yaml"
    bad.write_text(text.replace("  count: 2\n", "  count: -1\n").replace("hosts: 12", "hosts: 0"))
    with pytest.raises(TopologyError) as caught:
        load_topology(bad)
    assert len(caught.value.lines) == 2
    assert "servers.count" in caught.value.lines[0] and "ceph.hosts" in caught.value.lines[1]


@pytest.mark.parametrize(
    ("old", "new", "field", "words"),
    [
        ("  fsname: hot\n  mds: 2\n", "  fsname: hot\n  mds: 3\n", "lustre.mds", "must be even with mds_ha"),
        ("  ssd_hosts: 3\n", "  ssd_hosts: 2\n", "ceph.rbd.size", "3 replicas need 3 SSD hosts"),
        ("vlan: 200", "vlan: 100", "ethernet.segments[1].vlan", "VLAN 100 used twice"),
        (
            "{name: storage, lossless: true",
            "{name: storage, lossless: false",
            "ethernet.segments[0].lossless",
            "RoCE needs PFC/ECN",
        ),
        ("name: mgmt01", "name: gpu001", "management_nodes[1].name", "generated host name"),
        (
            "  access_switches: 0\n",
            "  access_switches: 0\n  radix: 8\n",
            "oob.access_switches",
            "28 endpoints",
        ),
    ],
)
def test_inconsistent_designs(tmp_path: Path, old: str, new: str, field: str, words: str) -> None:
    text = (TOPOLOGIES_DIR / "mini.yaml").read_text()
    assert old in text
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace(old, new, 1))
    with pytest.raises(TopologyError) as caught:
        load_topology(bad)
    message = str(caught.value)
    assert "bad.yaml:" in message and f": {field}: " in message and words in message


def test_unknown_name_lists_available() -> None:
    with pytest.raises(TopologyNotFound) as caught:
        load_topology("su-2048")
    assert str(caught.value) == (
        "unknown topology 'su-2048': no such file or name (available: mini, rack, su-1024)"
    )


def test_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    with pytest.raises(TopologyNotFound, match=r"nope\.yaml: no such file"):
        load_topology(missing)
    with pytest.raises(TopologyNotFound, match="is a directory"):
        load_topology(tmp_path)


def test_empty_and_non_mapping_files(tmp_path: Path) -> None:
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    with pytest.raises(TopologyError, match=r"empty\.yaml:1: empty file"):
        load_topology(empty)
    scalar = tmp_path / "scalar.yaml"
    scalar.write_text("- a\n- b\n")
    with pytest.raises(TopologyError, match=r"scalar\.yaml:1: expected a mapping of sections, got list"):
        load_topology(scalar)
