"""Ceph's errors map to gRPC status in one place (services/ceph/errors.py): no servicer or client
picks a status by hand."""

from __future__ import annotations

import re
from pathlib import Path

import grpc

from services.ceph.errors import CODES, CephError

ROOT = Path(__file__).resolve().parents[3]
CEPH_CODE = [ROOT / "services" / "ceph", ROOT / "emulator" / "sdk" / "ceph.py", ROOT / "emulator" / "cli" / "ceph.py"]


def test_every_code_is_a_grpc_status() -> None:
    for code in CODES:
        assert CephError(code, "x").grpc_status == grpc.StatusCode[code]   # type: ignore[arg-type]


def test_no_ad_hoc_status_mapping_in_ceph() -> None:
    files = [p for root in CEPH_CODE for p in ([root] if root.is_file() else root.rglob("*.py"))]
    hand = re.compile(r"getattr\(grpc\.StatusCode|context\.abort\(grpc\.StatusCode|StatusCode\.\w+ if ")
    found = [f"{p.relative_to(ROOT)}:{i}" for p in files for i, line in enumerate(p.read_text().splitlines(), 1)
             if hand.search(line) and p.name != "errors.py"]
    assert found == []
