"""`twin topo show` and `twin topo validate` through typer's CliRunner."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from emulator.cli.main import app

BAD = Path(__file__).resolve().parents[1] / "data" / "topologies"
runner = CliRunner()


def test_show_prints_the_su_figures() -> None:
    result = runner.invoke(app, ["topo", "show", "su-1024"])
    assert result.exit_code == 0, result.output
    out = result.stdout
    for expected in (
        "1,024",
        "32 x 4 servers",
        "40.8 kW",
        "1.3056 MW",
        "32 / 16",
        "204.8 Tb/s",
        "1:1",
        "64 of 64",
        "EC 8+3 usable",
        "2,792.727 TB",
    ):
        assert expected in out, expected


def test_show_json() -> None:
    result = runner.invoke(app, ["topo", "show", "mini", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert (doc["name"], doc["gpus"], doc["source"].endswith("topologies/mini.yaml")) == ("mini", 16, True)
    assert doc["compute"]["non_blocking"] is True


def test_show_unknown_name_is_a_one_line_user_error() -> None:
    result = runner.invoke(app, ["topo", "show", "nope"])
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "unknown topology 'nope': no such file or name (available: mini, rack, su-1024)"
    )
    assert "Traceback" not in result.output


def test_show_invalid_file_exits_2() -> None:
    result = runner.invoke(app, ["topo", "show", str(BAD / "odd_radix.yaml")])
    assert result.exit_code == 2
    assert "odd_radix.yaml:19: compute.leaf_radix: must be even, got 63" in result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_validate_good_files() -> None:
    result = runner.invoke(app, ["topo", "validate", "su-1024", "rack", "mini"])
    assert result.exit_code == 0, result.output
    assert "su-1024.yaml: ok (128 servers, 1024 GPUs, 32 racks)" in result.stdout
    assert "mini.yaml: ok (2 servers, 16 GPUs, 1 rack)" in result.stdout


def test_validate_bad_file_exits_1_and_checks_the_rest() -> None:
    result = runner.invoke(app, ["topo", "validate", str(BAD / "ec_hosts.yaml"), "mini"])
    assert result.exit_code == 1
    assert "ec_hosts.yaml:46: ceph.ec: EC 8+3 needs 11 hosts" in result.stderr
    assert "mini.yaml: ok" in result.stdout


def test_validate_malformed_yaml() -> None:
    result = runner.invoke(app, ["topo", "validate", str(BAD / "syntax.yaml")])
    assert result.exit_code == 1
    assert "syntax.yaml:5: invalid YAML" in result.stderr


def test_validate_missing_file_exits_2(tmp_path: Path) -> None:
    result = runner.invoke(app, ["topo", "validate", str(tmp_path / "gone.yaml")])
    assert result.exit_code == 2
    assert "gone.yaml: no such file" in result.stderr
