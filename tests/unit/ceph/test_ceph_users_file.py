"""RGW users from a start-up file: what `load_users` accepts, what it refuses (file, entry and field
named), and `twin up --ceph --ceph-users BAD` starting nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from emulator import lifecycle
from emulator.cli.main import app
from emulator.lifecycle import TwinError
from emulator.rundir import RunDir
from services.ceph.users_file import UsersFileError, load_users

GOOD = [{"uid": "alice", "display_name": "Alice", "access_key": "AK1", "secret_key": "s1"},
        {"uid": "bob", "display_name": "Bob", "email": "b@x", "tenant": "team-a", "access_key": "AK2",
         "secret_key": "s2"}]


def test_json_and_yaml_lists(tmp_path: Path) -> None:
    j = tmp_path / "u.json"
    j.write_text(json.dumps(GOOD))
    assert [u["uid"] for u in load_users(j)] == ["alice", "bob"]
    assert load_users(j)[0]["tenant"] == "" and load_users(j)[1]["tenant"] == "team-a"
    y = tmp_path / "u.yaml"
    y.write_text("users:\n  - {uid: carol, display_name: Carol, access_key: AK3, secret_key: s3}\n")
    assert load_users(y)[0]["access_key"] == "AK3"


@pytest.mark.parametrize(("doc", "problem"), [
    ({"uid": "x"}, "expected a list"),
    ([{"uid": "x", "display_name": "X", "access_key": "A"}], "users[0]: secret_key is required"),
    ([{**GOOD[0], "colour": "red"}], "unknown field(s) colour"),
    ([{**GOOD[0], "uid": "a$b"}], "bad uid"),
    ([{**GOOD[0], "tenant": "t t"}], "bad tenant"),
    ([GOOD[0], {**GOOD[1], "access_key": "AK1"}], "users[1]: access_key AK1 is already used by users[0]"),
    ([GOOD[0], {**GOOD[0], "access_key": "AK9"}], "users[1]: user alice is already defined"),
])
def test_bad_files_are_refused_with_the_entry_and_field(tmp_path: Path, doc: object, problem: str) -> None:
    p = tmp_path / "u.json"
    p.write_text(json.dumps(doc))
    with pytest.raises(UsersFileError) as e:
        load_users(p)
    assert problem in str(e.value) and str(p) in str(e.value)


def test_twin_up_with_a_bad_users_file_starts_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "users.yaml"
    bad.write_text("- {uid: x, display_name: X}\n")
    run = RunDir(tmp_path / "run")
    with pytest.raises(TwinError, match=r"users\[0\]: access_key is required"):
        lifecycle.up("mini", run, ceph=True, ceph_users=str(bad))
    assert not run.manifest.exists() and run.running_supervisor() is None
    r = CliRunner().invoke(app, ["up", "mini", "--ceph", "--ceph-users", str(tmp_path / "missing.json"),
                                 "--run-dir", str(run.path)])
    assert r.exit_code == 2 and "cannot read the Ceph users file" in r.output
    with pytest.raises(TwinError, match="needs --ceph"):
        lifecycle.up("mini", run, ceph_users=str(bad))
