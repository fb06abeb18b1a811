"""Each daemon kind's spec is a pydantic model its service declares (DaemonKind.spec): the planners
write it, the daemon parses it at start, and a malformed one stops the daemon with the field named,
before it opens a port or a store. Config files written before specs were typed still load."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from emulator.daemon_config import DaemonConfig, DaemonSpec, SpecError
from emulator.options import Options
from emulator.plan import make_plan
from emulator.service import daemon_kinds, runner
from emulator.topology import load_topology
from services.ceph.daemon_spec import OsdSpec

ROOT = Path(__file__).resolve().parents[2]


def config(kind: str, spec: dict, **extra: object) -> DaemonConfig:
    return DaemonConfig.from_dict({"name": "d1", "kind": kind, "twin": "t", "spec": spec, "grpc": "127.0.0.1:1",
                                   "metrics": None, "store_url": "sqlite://", "broker_host": "127.0.0.1",
                                   "broker_port": 1, **extra})


def test_every_daemon_kind_names_its_spec_model() -> None:
    kinds = daemon_kinds()
    assert set(kinds) >= {"gpu_node", "fabric", "ceph_mon", "ceph_osd", "ceph_rgw", "lustre_mds", "lustre_oss",
                          "slurm"}
    for name, kind in kinds.items():
        assert issubclass(kind.spec, DaemonSpec) and kind.spec is not DaemonSpec, name


def test_every_planned_daemon_has_its_kinds_spec_and_survives_the_json_round_trip(tmp_path: Path) -> None:
    opts = Options(twin="t", services=("fabric", "ceph", "lustre"))
    plan = make_plan(load_topology("rack"), 0, tmp_path, opts)
    kinds = daemon_kinds()
    assert {c.kind for c in plan.daemons} == set(kinds) - {"slurm"}   # Slurm starts on demand
    for cfg in plan.daemons:
        model = kinds[cfg.kind].spec
        assert isinstance(cfg.spec, model), cfg.name
        again = DaemonConfig.from_dict(json.loads(json.dumps(cfg.to_dict())))
        assert isinstance(again.spec, dict) and model.of(again) == cfg.spec, cfg.name


def test_a_malformed_spec_is_refused_at_start_with_its_fields_named() -> None:
    bad = config("ceph_osd", {"osd": "seven", "host": "ceph01", "device_class": "nvme", "heartbeat": 6})
    with pytest.raises(SpecError) as e:
        runner("ceph_osd")(bad)   # parsed before the daemon's code runs: nothing is opened
    msg = str(e.value)
    assert msg.startswith("daemon d1 (ceph_osd): its spec is not a OsdSpec: ")
    for field in ("osd:", "device_class:", "data_dir: Field required", "heartbeat: Extra inputs are not permitted"):
        assert field in msg, msg


def test_the_daemon_process_exits_naming_the_field(tmp_path: Path) -> None:
    """`python -m services.ceph.osd.daemon CONFIG.json`, as compose or a user runs one on its own."""
    path = tmp_path / "osd.json"
    path.write_text(json.dumps(config("ceph_osd", {"osd": 3, "host": "ceph01"}).to_dict()))
    r = subprocess.run([sys.executable, "-m", "services.ceph.osd.daemon", str(path)], cwd=ROOT,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0
    assert "SpecError: daemon d1 (ceph_osd): its spec is not a OsdSpec: data_dir: Field required" in r.stderr, \
        r.stderr[-2000:]
    assert not (tmp_path / "osd.3").exists()


def test_a_config_file_from_before_typed_specs_still_loads(tmp_path: Path) -> None:
    """The service's fields used to sit in `extra` as well as `spec`: both are the spec now."""
    old = config("ceph_osd", {}, extra={"osd": 3, "host": "ceph01", "data_dir": str(tmp_path / "osd.3"),
                                        "mon": "127.0.0.1:3300"})
    spec = OsdSpec.of(old)
    assert (spec.osd, spec.host, spec.mon, spec.device_class, spec.storage_timing) == \
        (3, "ceph01", "127.0.0.1:3300", "hdd", "model")
    assert "extra" not in old.to_dict()
