"""A manifest for a twin that is not running (a test's own run directory): the twin-wide fields filled
with placeholders, so a test names only the daemons and sections it is about. It is checked by the
same `Manifest` type the supervisor writes through."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from emulator.manifest import Manifest


def fake_manifest(run_dir: Path, daemons: list[dict[str, Any]], **fields: Any) -> Manifest:
    """A manifest with these daemons (each `host` defaults to its name) and fields (network, management,
    services' sections, ...)."""
    doc = {"twin": "t", "topology": "mini", "topology_file": "mini", "network": "loopback", "slot": 0,
           "run_dir": str(run_dir), "clock": {}, "store": "sqlite",
           "broker": {"host": "127.0.0.1", "port": 1, "url": "mqtt://127.0.0.1:1", "managed": False,
                      "topic_prefix": "clustertwin/t"},
           "management": {"host": "mgmt01", "addresses": {}},
           "daemons": [{"host": d["name"], "addresses": {}} | d for d in daemons]}
    return Manifest.of(doc | fields)


def write_manifest(run_dir: Path, daemons: list[dict[str, Any]], **fields: Any) -> Manifest:
    """RUN_DIR/manifest.json: fake_manifest's."""
    manifest = fake_manifest(run_dir, daemons, **fields)
    (run_dir / "manifest.json").write_text(json.dumps(manifest.dump()))
    return manifest


def lustre_section(data_dir: Path, osts: dict[int, str]) -> dict[str, Any]:
    """A `lustre` section: OST index -> its OSS, each served at 127.0.0.1:1 (nothing listens there)."""
    return {"fsname": "lustre", "mgs": "127.0.0.1@tcp:/lustre", "mds": ["127.0.0.1:1"], "data_dir": str(data_dir),
            "osts": [{"index": i, "oss": oss, "capacity_bytes": 1 << 40, "dir": str(data_dir / f"OST{i:04x}"),
                      "servers": ["127.0.0.1:1"]} for i, oss in osts.items()]}
