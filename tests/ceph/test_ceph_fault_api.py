"""OSD faults through the twin's fault API (`twin fault inject|clear|list osd.N ...`) on a
`twin up mini --ceph`: each maps to the Ceph admin call, is listed with the GPU faults, and is
published on the bus with the monitor's OSD and PG state changes it causes. The twin starts with
`--ceph-users FILE`: those users sign S3 requests from the start."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from clustertwin.v1 import ceph_pb2 as pb
from emulator.cli.main import app
from emulator.client import Twin
from emulator.errors import TwinRpcError
from services.ceph.sdk import CephAdmin
from tests.ceph.helpers import all_clean, ceph_twin, wait_for

DATA = "default.rgw.buckets.data"
AK, SK = "FILEDUSERKEY00000001", "fileduser0secret000000000000000000000001"


@pytest.fixture(scope="module")
def twin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CephAdmin]:
    users = tmp_path_factory.mktemp("faultapi-users") / "users.yaml"
    users.write_text(f"- {{uid: filed, display_name: From File, access_key: {AK}, secret_key: {SK}}}\n"
                     "- {uid: ops, tenant: team-a, display_name: Ops, access_key: AKOPS, secret_key: skops}\n")
    with ceph_twin(tmp_path_factory, "faultapi", ceph_users=str(users)) as admin:
        yield admin


def fault(admin: CephAdmin, *args: str) -> Any:
    return CliRunner().invoke(app, ["fault", *args, "--run-dir", str(admin.run.path)])


def osd_stat(admin: CephAdmin, osd: int) -> pb.CephOsdStat:
    return admin.osd(osd, "Stat", pb.CephOsdStatRequest()).stat


def tree(admin: CephAdmin) -> dict[int, pb.CephOsdInfo]:
    return {o.id: o for o in admin.call("OsdTree", pb.CephMonOsdTreeRequest()).osds}


def test_stop_is_an_event_a_listed_fault_and_clears(twin: CephAdmin) -> None:
    t = Twin.connect(twin.run.path)
    with t.events("events/ceph/#", "faults/ceph/#") as sub:
        r = fault(twin, "inject", "osd.3", "--kind", "stop")
        assert r.exit_code == 0 and "(ceph stop on osd.3): stopped" in r.output, r.output
        # the fault record and the monitor's reactions come from different daemons: any order
        got = sub.wait_for_all({
            "fault": lambda m: m["_topic"].endswith("/events/ceph/fault"),
            "retained": lambda m: m["_topic"].endswith("/faults/ceph/osd.3-1"),
            "down": lambda m: m["_topic"].endswith("/events/ceph/osd_down"),
            # a PG degraded by this stop (not a start-up transition to clean published late)
            "pg": lambda m: m["_topic"].endswith("/events/ceph/pg_state") and "degraded" in m["to"]}, timeout=15)
        ev, retained, down, pg = got["fault"], got["retained"], got["down"], got["pg"]
        assert ev["fault"]["kind"] == "stop" and ev["osd"] == 3 and ev["fault"]["active"]
        assert retained["kind"] == "stop"
        assert down["osd"] == 3
        assert pg["from"] == "active+clean" and "degraded" in pg["to"]
        listed = fault(twin, "list").output
        assert "osd.3" in listed and "osd.3-1" in listed and "stop" in listed
        assert not tree(twin)[3].up and osd_stat(twin, 3).state == "stopped"

        r = fault(twin, "clear", "osd.3", "osd.3-1")
        assert r.exit_code == 0 and "(ceph stop on osd.3) cleared" in r.output, r.output
        got = sub.wait_for_all({"clear": lambda m: m["_topic"].endswith("/events/ceph/fault_clear"),
                                "up": lambda m: m["_topic"].endswith("/events/ceph/osd_up")}, timeout=15)
        assert got["clear"]["osd"] == 3 and got["up"]["osd"] == 3
        wait_for("active+clean", lambda: all_clean(twin), timeout=30)
    assert "osd.3-1" not in fault(twin, "list").output
    assert "osd.3-1" in fault(twin, "list", "--all").output


def test_slow_out_kill_corrupt(twin: CephAdmin) -> None:
    r = fault(twin, "inject", "osd.5", "--kind", "slow", "--factor", "4")
    assert r.exit_code == 0 and "slow disk" in r.output, r.output
    fid = r.output.split()[1]
    assert osd_stat(twin, 5).slow_factor == 4
    assert fault(twin, "clear", fid).exit_code == 0
    assert osd_stat(twin, 5).slow_factor == 1

    t = Twin.connect(twin.run.path)
    with t.events("events/ceph/#") as sub:
        r = fault(twin, "inject", "osd.6", "--kind", "out")
        assert r.exit_code == 0 and "marked out osd.6" in r.output, r.output
        assert sub.wait_for(lambda m: m["_topic"].endswith("/events/ceph/osd_out"), timeout=15)["osd"] == 6
        fid = r.output.split()[1]
        assert fault(twin, "clear", fid).exit_code == 0
        assert sub.wait_for(lambda m: m["_topic"].endswith("/events/ceph/osd_in"), timeout=15)["osd"] == 6
    wait_for("active+clean", lambda: all_clean(twin), timeout=30)

    old = twin.pid("osd.7")
    r = fault(twin, "inject", "osd.7", "--kind", "kill")
    assert r.exit_code == 0 and "SIGKILL" in r.output, r.output
    wait_for("restarted", lambda: twin.run.read(twin.run.daemons)["daemons"]["osd.7"]["pid"] not in (0, old))
    assert "kill" in fault(twin, "list", "--all").output

    twin.call("PutObject", pb.CephMonPutObjectRequest(pool=DATA, name="victim", data=b"x" * 100_000))
    osd = twin.call("Pgs", pb.CephMonPgsRequest(pool=DATA, object="victim")).pgs[0].acting[2]
    r = fault(twin, "inject", f"osd.{osd}", "--kind", "corrupt", "--object", "victim")
    assert r.exit_code == 0 and "corrupted shard 2 of 'victim'" in r.output, r.output
    pgid = twin.call("Pgs", pb.CephMonPgsRequest(pool=DATA, object="victim")).pgs[0].pgid
    assert len(twin.call("Scrub", pb.CephMonScrubRequest(pg=pgid)).errors) == 1
    assert fault(twin, "clear", r.output.split()[1]).exit_code == 0   # repairs the PG
    assert twin.call("Scrub", pb.CephMonScrubRequest(pg=pgid)).errors == []
    wait_for("active+clean", lambda: all_clean(twin), timeout=30)


def test_bad_osd_faults_are_refused_and_gpu_faults_still_work(twin: CephAdmin) -> None:
    r = fault(twin, "inject", "osd.99", "--kind", "stop")
    assert r.exit_code == 2 and "no OSD 'osd.99'" in r.output, r.output
    r = fault(twin, "inject", "osd.1")
    assert r.exit_code == 2 and "kind of ceph fault" in r.output, r.output
    r = fault(twin, "inject", "osd.1", "--kind", "slow")
    assert r.exit_code == 2 and "factor" in r.output, r.output
    before = len(twin.list_faults(include_cleared=True))
    r = fault(twin, "inject", "gpu001", "--gpu", "1", "--xid", "13")
    assert r.exit_code == 0 and "(gpu xid on gpu001): GPU 1" in r.output, r.output
    assert len(twin.list_faults(include_cleared=True)) == before   # the refusals logged nothing
    only_gpu = fault(twin, "list", "--all", "--subsystem", "gpu").output
    assert "gpu001" in only_gpu and "osd." not in only_gpu


def test_users_from_the_start_up_file_sign_requests(twin: CephAdmin) -> None:
    import boto3
    from botocore.config import Config

    listed = CliRunner().invoke(app, ["ceph", "user", "list", "--run-dir", str(twin.run.path)]).output
    assert '"filed"' in listed and '"team-a$ops"' in listed
    s3 = boto3.client("s3", endpoint_url=twin.s3_endpoint(), aws_access_key_id=AK, aws_secret_access_key=SK,
                      region_name="us-east-1", config=Config(retries={"max_attempts": 0},
                                                             s3={"addressing_style": "path"}))
    s3.create_bucket(Bucket="from-file")
    s3.put_object(Bucket="from-file", Key="k", Body=b"hello")
    assert s3.get_object(Bucket="from-file", Key="k")["Body"].read() == b"hello"


def test_sdk_inject_list_clear_round_trip_with_its_events(twin: CephAdmin) -> None:
    """CephAdmin.inject_fault returns the logged fault (its id), list_faults shows it, clear_fault undoes
    and logs it; each step is an event on the bus and the record is retained on faults/ceph/<id> while active."""
    t = Twin.connect(twin.run.path)
    with t.events("events/ceph/fault", "events/ceph/fault_clear", "faults/ceph/#") as sub:
        f = twin.inject_fault(8, "slow", factor=3.0)
        assert f.id.startswith("osd.8-") and f.active and osd_stat(twin, 8).slow_factor == 3
        assert [x.id for x in twin.list_faults() if x.osd == 8] == [f.id]
        got = sub.wait_for_all({"event": lambda m: m["_topic"].endswith("/events/ceph/fault"),
                                "record": lambda m: m["_topic"].endswith(f"/faults/ceph/{f.id}")}, timeout=15)
        assert got["event"]["fault"]["id"] == f.id and got["event"]["fault"]["params"] == {"factor": 3.0}
        assert got["record"]["target"] == "osd.8" and got["record"]["active"]
        cleared = twin.clear_fault(f.id)
        assert not cleared.active and cleared.cleared_at >= f.injected_at and osd_stat(twin, 8).slow_factor == 1
        ev = sub.wait_for(lambda m: m["_topic"].endswith("/events/ceph/fault_clear"), timeout=15)
        assert ev["fault"]["id"] == f.id and not ev["fault"]["active"]
    assert f.id not in [x.id for x in twin.list_faults()]
    assert f.id in [x.id for x in twin.list_faults(include_cleared=True)]
    with pytest.raises(KeyError):
        twin.clear_fault(f.id, osd=9)   # not osd.9's


def test_osd_shortcuts_are_logged_faults(twin: CephAdmin) -> None:
    """`twin ceph osd stop|start|slow|kill` go through the fault API: each prints and logs its fault."""
    def ceph(*args: str) -> Any:
        return CliRunner().invoke(app, ["ceph", "osd", *args, "--run-dir", str(twin.run.path)])

    r = ceph("stop", "9")
    assert r.exit_code == 0 and "osd.9 stopped (fault osd.9-" in r.output, r.output
    stop = twin.active_fault(9, "stop")
    assert stop is not None and stop.id in r.output
    r = ceph("start", "9")
    assert r.exit_code == 0 and f"osd.9 running (fault {stop.id} cleared)" in r.output, r.output
    assert twin.active_fault(9, "stop") is None and osd_stat(twin, 9).state == "running"
    assert "(fault osd.10-" in ceph("slow", "10", "5").output
    r = ceph("slow", "10", "1")   # heals: the slow fault is cleared
    assert r.exit_code == 0 and "slow factor 1" in r.output and twin.active_fault(10, "slow") is None
    old = twin.pid("osd.11")
    r = ceph("kill", "11")
    assert r.exit_code == 0 and f"killed (pid {old}) with SIGKILL" in r.output, r.output
    kill = [f for f in twin.list_faults(include_cleared=True) if f.osd == 11 and f.kind == "kill"]
    assert len(kill) == 1 and not kill[0].active   # over once the supervisor restarts it
    wait_for("restarted", lambda: twin.run.read(twin.run.daemons)["daemons"]["osd.11"]["pid"] not in (0, old))
    wait_for("active+clean", lambda: all_clean(twin), timeout=30)


def test_a_stopped_slow_osd_stays_so_across_kill9_from_its_store(twin: CephAdmin) -> None:
    """The OSD's own fault state is a row of its store (no marker files beside its chunks): a kill -9
    and the supervisor's restart bring it back stopped and slow, until started and healed."""
    stop, slow = twin.inject_fault(12, "stop"), twin.inject_fault(12, "slow", factor=6.0)
    old = twin.pid("osd.12")
    twin.kill("osd.12")
    wait_for("restarted", lambda: twin.run.read(twin.run.daemons)["daemons"]["osd.12"]["pid"] not in (0, old))
    st = wait_for("serving", lambda: _stat_or_none(twin, 12))
    assert st.state == "stopped" and st.slow_factor == 6.0
    assert sorted(p.name for p in Path(st.data_dir).iterdir()) == ["current"]
    db = sqlite3.connect(twin.run.path / "state" / "osd.12.db")
    try:
        row = db.execute("SELECT stopped, slow_factor FROM ceph_osd_state WHERE name = 'osd.12'").fetchone()
        assert row == (1, 6.0)
    finally:
        db.close()
    twin.clear_fault(slow.id)
    twin.clear_fault(stop.id)
    assert osd_stat(twin, 12).state == "running" and osd_stat(twin, 12).slow_factor == 1.0
    wait_for("active+clean", lambda: all_clean(twin), timeout=30)


def _stat_or_none(admin: CephAdmin, osd: int) -> pb.CephOsdStat | None:
    try:
        return osd_stat(admin, osd)
    except TwinRpcError:
        return None
