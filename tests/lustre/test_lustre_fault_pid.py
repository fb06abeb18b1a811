"""`twin lustre fault oss-kill` signals the OSS only while daemons.json's pid is still that OSS (the start
time recorded beside it matches): a pid the kernel has since given to another process is left alone, and
the refused fault changes nothing (no marker keeps the OSS down)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from emulator import process
from services.lustre.oss.daemon import fault_marker
from tests.lustre.conftest import twin_cli


def test_oss_kill_leaves_a_pid_that_is_no_longer_the_oss(tmp_path: Path) -> None:
    data = tmp_path / "lustre"
    (tmp_path / "manifest.json").write_text(json.dumps({
        "lustre": {"data_dir": str(data)},
        "daemons": [{"name": "oss01", "kind": "lustre_oss", "osts": [0, 1], "partner": "oss02"}]}))
    other = subprocess.Popen(["sleep", "300"])   # holds the pid the OSS once had
    try:
        wrong = process.start_time(other.pid) - 1
        (tmp_path / "daemons.json").write_text(json.dumps({
            "daemons": {"oss01": {"pid": other.pid, "start": wrong, "state": "running"}}}))
        r = twin_cli("lustre", "fault", "oss-kill", "oss01", run=tmp_path, check=False)
        assert r.returncode == 1 and "oss01 is not running" in r.stderr, r.stderr
        assert other.poll() is None   # not signalled
        assert not fault_marker(data, "oss01").exists()
    finally:
        other.kill()
        other.wait()
