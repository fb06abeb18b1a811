"""The manifest is one type (emulator/manifest.py), written and read through it; each service's own
fields are read through that service's models (services/<x>/manifest.py), which its planner writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from emulator.manifest import Manifest, ManifestError
from emulator.options import Options
from emulator.plan import make_plan
from emulator.topology import load_topology
from services.ceph.manifest import OsdEntry, gateway, osds
from services.fabric.manifest import fabric_manager
from services.lustre.manifest import LustreSection, servers
from tests.fake_manifest import fake_manifest


def test_a_planned_manifest_reads_through_every_services_models(tmp_path: Path) -> None:
    plan = make_plan(load_topology("rack"), 0, tmp_path, Options(twin="t", services=("fabric", "ceph", "lustre")))
    m = Manifest.of(json.loads(json.dumps(plan.manifest.dump())))   # as a reader finds it on disk
    assert m == plan.manifest
    lu = LustreSection.of(m)
    assert lu is not None and lu.fsname and {o.oss for o in lu.osts} == {"oss01", "oss02"}
    mds, oss = servers(m)
    assert sorted(mds) == ["mds01", "mds02"] and all(d.admin and d.health_address == d.admin for d in mds.values())
    assert sorted(i for d in oss.values() for i in d.osts) == [o.index for o in lu.osts]
    assert [d.osd for d in osds(m)] == list(range(len(m.daemons_of("ceph_osd"))))
    rgw = gateway(m)
    assert rgw is not None and rgw.s3.startswith("http://") and rgw.s3 in rgw.urls()
    fabric = fabric_manager(m)
    assert fabric is not None and fabric.ufm.endswith("/ufmRest")
    assert m.daemon("gpu001").metrics in m.daemon("gpu001").urls()


def test_a_twin_without_the_service_has_none_of_its_parts(tmp_path: Path) -> None:
    m = fake_manifest(tmp_path, [{"name": "gpu001", "kind": "gpu_node", "grpc": "127.0.0.1:1"}])
    assert LustreSection.of(m) is None and gateway(m) is None and fabric_manager(m) is None and osds(m) == []
    assert m.network_backend is None


def test_a_malformed_manifest_or_entry_names_the_field(tmp_path: Path) -> None:
    doc = fake_manifest(tmp_path, []).dump()
    del doc["broker"]
    with pytest.raises(ManifestError, match=r"^manifest: broker: Field required$"):
        Manifest.of(doc)
    m = fake_manifest(tmp_path, [{"name": "osd.1", "kind": "ceph_osd", "grpc": "127.0.0.1:1", "osd": "one",
                                  "device_class": "hdd"}])
    with pytest.raises(ManifestError, match=r"manifest entry osd.1 \(ceph_osd\): osd: Input should be a valid integer"):
        m.daemon("osd.1").typed(OsdEntry)
    m = fake_manifest(tmp_path, [], lustre={"fsname": "hot"})
    with pytest.raises(ManifestError, match="manifest section 'lustre': mgs: Field required"):
        LustreSection.of(m)
