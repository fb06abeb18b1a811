"""`twin lustre fault oss-kill` signals the OSS only while daemons.json's pid is still that OSS (the start
time recorded beside it matches): a pid the kernel has since given to another process is left alone, and
the fault is refused before it is injected (nothing listens at the OSS's address here: an attempt to
inject would fail differently)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from emulator import process
from tests.fake_manifest import lustre_section, write_manifest
from tests.lustre.conftest import twin_cli


def test_oss_kill_leaves_a_pid_that_is_no_longer_the_oss(tmp_path: Path) -> None:
    data = tmp_path / "lustre"
    write_manifest(tmp_path, [{"name": "oss01", "kind": "lustre_oss", "grpc": "127.0.0.1:1", "bulk": "127.0.0.1:2",
                               "osts": [0, 1], "partner": "oss02"}],
                   lustre=lustre_section(data, {0: "oss01", 1: "oss01"}))
    other = subprocess.Popen(["sleep", "300"])   # holds the pid the OSS once had
    try:
        wrong = process.start_time(other.pid) - 1
        (tmp_path / "daemons.json").write_text(json.dumps({
            "daemons": {"oss01": {"pid": other.pid, "start": wrong, "state": "running"}}}))
        r = twin_cli("lustre", "fault", "oss-kill", "oss01", run=tmp_path, check=False)
        assert r.returncode == 1 and "oss01 is not running" in r.stderr, r.stderr
        assert other.poll() is None   # not signalled
    finally:
        other.kill()
        other.wait()
