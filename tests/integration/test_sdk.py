"""The SDK: every accessor of `emulator.client.Twin` against one real loopback twin (mini with the
fabric manager, Ceph and Lustre; Slurm started through the SDK), and the CLI reading what the SDK did.

Ceph's clock runs 50x (as in tests/ceph) so that a stopped OSD is marked down and a started one up
again in a fraction of a second of wall time.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError
from typer.testing import CliRunner

from emulator import process
from emulator.cli.main import app
from emulator.client import Twin, TwinRpcError
from emulator.manifest import Manifest
from emulator.rundir import RunDirError
from services.fabric.subnet import missing_tools as fabric_missing
from services.lustre.manifest import LustreSection
from services.slurm.cluster import APT_PACKAGES, missing_tools
from tests.conftest import assert_nothing_left, skip_reason, twin_pids
from tests.fake_manifest import lustre_section, write_manifest

REASON = skip_reason("SDK tests (fabric manager, Lustre, Slurm as root)", fabric_missing() + missing_tools(),
                     ["ibsim-utils", "opensm", "infiniband-diags", *APT_PACKAGES])
pytestmark = pytest.mark.skipif(bool(REASON), reason=REASON or "n/a")

AK, SK = "SDKTESTKEY0000000001", "sdktestsecret00000000000000000000000001"


def wait_for(what: str, cond: Callable[[], Any], timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while not (got := cond()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")
        time.sleep(0.1)
    return got


@pytest.fixture(scope="module")
def twin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Twin]:
    t = Twin.up("mini", run_dir=tmp_path_factory.mktemp("sdk") / "run", fabric=True, ceph=True, lustre=True,
                clock_scale=50.0, timeout=120)
    pids = twin_pids(t.run)
    try:
        yield t
    finally:
        t.slurm().down()
        pids = sorted(set(pids + twin_pids(t.run)))
        t.down()
        assert_nothing_left(t.run, pids)


def cli(twin: Twin, *args: str) -> Any:
    r = CliRunner().invoke(app, [*args, "--run-dir", str(twin.run.path)])
    assert r.exit_code == 0, r.output
    return r.output


def osd(ceph: Any, osd_id: int) -> Any:
    return next(o for o in ceph.osd_tree().osds if o.id == osd_id)


def without(twin: Twin, *kinds: str, **drop: Any) -> Twin:
    """The same run directory, described by a manifest without these daemons or sections: a twin
    started without the service, for the accessors' refusals."""
    doc = {k: v for k, v in twin.manifest.dump().items() if k not in drop}
    doc["daemons"] = [d.model_dump() for d in twin.manifest.daemons if d.kind not in kinds]
    return Twin(twin.run, Manifest.of(doc))


def test_gpu_nodes_are_names_and_called_their_clients(twin: Twin) -> None:
    names = twin.gpu_nodes
    assert names == [d.name for d in twin.daemons("gpu_node")] and "gpu001" in names
    clients = twin.gpu_nodes()
    assert [c.name for c in clients] == names
    assert all(len(c.gpus()) == 8 for c in clients)
    assert clients[0] is twin.gpu_node(names[0])


def test_fabric(twin: Twin) -> None:
    with twin.fabric() as fabric:
        ports = fabric.call("ListPorts", computer_only=True).ports
    assert len(ports) == 16
    with pytest.raises(KeyError, match="runs no fabric manager"):
        without(twin, "fabric").fabric()


def test_ceph_admin_osd_fault_and_the_cli_see_the_same(twin: Twin) -> None:
    with twin.ceph() as ceph:
        assert wait_for("HEALTH_OK", lambda: ceph.status().health == "HEALTH_OK")
        f = ceph.inject_osd_fault(3, "stop")
        assert f.active and f.id.startswith("osd.3")
        assert wait_for("osd.3 down", lambda: not osd(ceph, 3).up)
        assert f.id in cli(twin, "fault", "list", "--json")   # the CLI lists the SDK's fault
        listed = [x for x in twin.faults().list() if x.subsystem == "ceph"]
        assert [(x.target, x.backend_id, x.kind) for x in listed] == [("osd.3", f.id, "stop")]
        assert not ceph.clear_osd_fault(f.id).active
        assert wait_for("osd.3 up", lambda: osd(ceph, 3).up)
        assert not twin.faults().ceph()
        with pytest.raises(ValueError, match="--kind slow needs --factor"):
            ceph.inject_osd_fault(3, "slow", factor=1.0)
        with pytest.raises(KeyError, match="there is no osd.99"):
            ceph.inject_osd_fault(99, "stop")
        assert not ceph.osd_faults(include_cleared=False)   # the refusals recorded nothing
    with pytest.raises(RunDirError, match="runs no Ceph"):
        without(twin, "ceph_mon").ceph()


def test_rbd_through_the_sdk_and_the_cli(twin: Twin) -> None:
    rbd = twin.ceph().rbd()
    rbd.create("rbd", "sdk-disk", 8 << 20)
    data = bytes(range(256)) * 4096
    assert rbd.write("rbd", "sdk-disk", 4096, data) == len(data)
    assert rbd.read("rbd", "sdk-disk", 4096, len(data)) == data
    rbd.snap("SnapCreate", "rbd", "sdk-disk", "s1")
    assert [s.name for s in rbd.snaps("rbd", "sdk-disk")] == ["s1"]
    assert "sdk-disk" in cli(twin, "ceph", "rbd", "ls").split()
    assert "size 8 MiB in 2 objects" in cli(twin, "ceph", "rbd", "info", "sdk-disk")
    with pytest.raises(TwinRpcError):   # rbd refuses to remove an image with snapshots
        rbd.remove("rbd", "sdk-disk")
    rbd.snap("SnapRemove", "rbd", "sdk-disk", "s1")
    rbd.remove("rbd", "sdk-disk")
    assert "sdk-disk" not in rbd.list("rbd")


def test_s3_client_on_the_gateway(twin: Twin) -> None:
    user = twin.ceph().user_create("sdk-user", "SDK User", access_key=AK, secret_key=SK)
    assert user.access_key == AK and "sdk-user" in [u.uid for u in twin.ceph().users()]
    s3 = twin.s3(AK, SK)
    s3.create_bucket(Bucket="sdk")
    body = b"sdk-object " * 10000
    s3.put_object(Bucket="sdk", Key="a/b", Body=body)
    assert s3.get_object(Bucket="sdk", Key="a/b")["Body"].read() == body
    with pytest.raises(ClientError, match="InvalidAccessKeyId"):
        twin.s3("NOSUCHKEY00000000000", SK).list_buckets()
    with pytest.raises(RunDirError, match="runs no S3 gateway"):
        without(twin, "ceph_rgw").s3(AK, SK)


def test_lustre_admin_and_its_faults(twin: Twin) -> None:
    with twin.lustre() as lu:
        st = lu.statfs()
        assert st.fsname == lu.fsname and len(st.osts) == len(LustreSection.of(twin.manifest).osts) >= 1
        oss = lu.oss_names()[0]
        with pytest.raises(KeyError, match="no OSS named 'oss99'"):
            lu.kill_oss("oss99")
        with pytest.raises(KeyError, match="has no oss-kill fault"):
            lu.start_oss(oss)
        pid = lu.kill_oss(oss)
        listed = [x for x in twin.faults().list() if x.subsystem == "lustre"]
        assert [(x.target, x.kind) for x in listed] == [(oss, "oss-kill")]
        assert f"{oss}-down" in cli(twin, "fault", "list", "--json")   # `twin fault list` shows Lustre's faults too
        lu.start_oss(oss)
        assert not twin.faults().lustre()
        wait_for(f"{oss} serving again", lambda: {d["name"]: d for d in twin.status()["daemons"]}[oss]["pid"]
                 not in (0, pid) and {d["name"]: d for d in twin.status()["daemons"]}[oss]["health"] == "SERVING",
                 timeout=90)
    with pytest.raises(RunDirError, match="runs no Lustre"):
        without(twin, lustre=True).lustre()


def test_network_needs_netns(twin: Twin) -> None:
    with pytest.raises(RunDirError, match="network faults need `twin up --network netns`"):
        twin.network()
    assert twin.faults().network() == []


def test_gpu_faults_in_the_one_list(twin: Twin) -> None:
    node = twin.gpu_node("gpu002")
    f = node.inject_xid(gpu=3, xid=79)
    found = [x for x in twin.faults().list() if x.subsystem == "gpu"]
    assert [(x.target, x.backend_id, x.kind, x.params) for x in found] == [("gpu002", f"gpu002/{f.id}", "xid",
                                                                             {"gpu": 3, "xid": 79})]
    node.reboot()   # Xid 79: the GPU fell off the bus; only a reboot clears it
    assert twin.faults().gpu() == [] and [x.id for x in twin.faults().gpu(include_cleared=True)] == [f.id]


def test_slurm_up_query_down(twin: Twin) -> None:
    slurm = twin.slurm()
    assert slurm.running() is None
    doc = slurm.up(timeout=120, health_interval=0)
    assert doc["state"] == "ready" and slurm.running() == doc["pid"]
    assert slurm.env() == {"SLURM_CONF": str(twin.run.path / "slurm" / "slurm.conf")}
    nodes = slurm.nodes()
    assert sorted(nodes) == sorted(twin.gpu_nodes) and {n["state"] for n in nodes.values()} == {"idle"}
    r = slurm.sinfo("-h", "-N", "-o", "%N")
    assert r.returncode == 0 and sorted(set(r.stdout.split())) == sorted(twin.gpu_nodes)   # a line per partition
    assert slurm.squeue("-h").returncode == 0
    assert slurm.down() and slurm.running() is None
    assert slurm.down() == []


def test_a_reused_pid_is_never_killed(tmp_path: Path) -> None:
    """The OSD kill and Lustre's oss-kill signal a daemon only while daemons.json's pid is still that
    daemon (its recorded start time); a refused oss-kill leaves no marker keeping the OSS down."""
    data = tmp_path / "lustre"
    write_manifest(tmp_path, [
        {"name": "ceph-mon", "kind": "ceph_mon", "grpc": "127.0.0.1:1"},
        {"name": "osd.3", "kind": "ceph_osd", "osd": 3, "device_class": "hdd", "grpc": "127.0.0.1:1"},
        {"name": "oss01", "kind": "lustre_oss", "grpc": "127.0.0.1:1", "bulk": "127.0.0.1:2", "osts": [0]}],
        lustre=lustre_section(data, {0: "oss01"}))
    other = subprocess.Popen(["sleep", "300"])   # holds the pid the daemons once had
    try:
        wrong = process.start_time(other.pid) - 1
        (tmp_path / "daemons.json").write_text(json.dumps({"daemons": {
            name: {"pid": other.pid, "start": wrong, "state": "running"} for name in ("osd.3", "oss01")}}))
        twin = Twin.connect(tmp_path)
        with pytest.raises(RunDirError, match="osd.3 is not running"):
            twin.ceph().inject_osd_fault(3, "kill")
        with pytest.raises(RunDirError, match="oss01 is not running"), twin.lustre() as lu:
            lu.kill_oss("oss01")
        assert other.poll() is None
    finally:
        other.kill()
        other.wait()
