"""Lustre on the storage segment: `twin up rack --lustre --network netns`. The MDS and OSS daemons serve
on their hosts' storage-network addresses (the OOB ones carry only their management API), the client
mount runs in a client node's namespace (gpu001) and reaches them through its storage NIC, a striped
file round-trips through the mount, and `lfs getstripe`/`lfs df` work; `twin down` leaves no namespace
and no mount."""

from __future__ import annotations

import errno
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from emulator.manifest import DaemonEntry, Manifest
from services.ceph.manifest import gateway
from services.lustre.client.mount import is_mounted
from services.lustre.manifest import LustreSection, OssEntry
from tests.conftest import netns_skip_reason
from tests.lustre.conftest import FUSE_MISSING, TWIN, LustreMount, MiB, lustre_mount, pattern

STORAGE, OOB = "10.101.", "10.103."


def _why_skip() -> str:
    if FUSE_MISSING:
        return "needs root, /dev/fuse and fusermount3"
    return netns_skip_reason("Lustre on --network netns")


@pytest.fixture(scope="module")
def netns_lustre(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LustreMount]:
    if reason := _why_skip():
        pytest.skip(reason)
    gen = lustre_mount(tmp_path_factory.mktemp("lustre-netns"), "rack", "--network", "netns", "--ceph")
    m = next(gen)
    prefix = f"ct{m.manifest.slot}-"
    yield m
    next(gen, None)   # umount, `twin down`, no mount left
    names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
    assert not [n for n in names if n.startswith(prefix)], "twin down left namespaces behind"


def lustre_daemons(manifest: Manifest) -> list[DaemonEntry]:
    return [d for d in manifest.daemons if d.kind in ("lustre_mds", "lustre_oss")]


def test_servers_listen_on_the_storage_network(netns_lustre: LustreMount) -> None:
    doc = Manifest.of(json.loads(netns_lustre.cli("endpoints", "--json").stdout))
    assert doc.network == "netns"
    daemons = lustre_daemons(doc)
    assert sorted(d.name for d in daemons) == ["mds01", "mds02", "oss01", "oss02"]
    for d in daemons:
        host, _, port = d.grpc.rpartition(":")
        assert host == d.addresses["storage"] and host.startswith(STORAGE), d
        assert port == "50988"
        assert d.admin == f"{d.addresses['oob']}:50988" and d.admin.startswith(OOB), d
        if d.kind == "lustre_oss":
            assert d.typed(OssEntry).bulk == f"{host}:50989"
    lu = LustreSection.require(doc, netns_lustre.run)
    assert all(a.startswith(STORAGE) for a in lu.mds)
    assert all(s.startswith(STORAGE) for o in lu.osts for s in o.servers)
    assert lu.mgs == ":".join(f"{a.rpartition(':')[0]}@tcp" for a in lu.mds) + ":/hot"
    # `twin status` checks health on the management addresses, from the operator port
    status = netns_lustre.cli("status").stdout
    assert status.count("SERVING") == len(doc.daemons), status


def test_the_storage_network_is_not_reachable_from_the_operator_port(netns_lustre: LustreMount) -> None:
    oss = next(d for d in lustre_daemons(netns_lustre.manifest) if d.kind == "lustre_oss")
    host, _, port = oss.grpc.rpartition(":")
    with socket.socket() as s:
        s.settimeout(2)
        err = s.connect_ex((host, int(port)))
    assert err in (errno.ENETUNREACH, errno.EHOSTUNREACH, errno.ETIMEDOUT, errno.ECONNREFUSED, errno.EAGAIN), err


def test_the_client_runs_on_gpu001_over_its_storage_nic(netns_lustre: LustreMount) -> None:
    rec = json.loads(next((netns_lustre.run / "mounts").glob("lustre-*.json")).read_text())
    gpu001 = netns_lustre.manifest.daemon("gpu001")
    assert (rec["host"], rec["netns"]) == ("gpu001", gpu001.netns)
    assert os.stat(f"/proc/{rec['pid']}/ns/net").st_ino == os.stat(f"/run/netns/{gpu001.netns}").st_ino
    (netns_lustre.mnt / "hello").write_bytes(b"over the storage network")
    ss = subprocess.run(["ip", "netns", "exec", str(gpu001.netns), "ss", "-tnH", "state", "established"],
                        capture_output=True, text=True, check=True).stdout
    servers = {d.grpc for d in lustre_daemons(netns_lustre.manifest)}
    conns = [line.split()[-2:] for line in ss.splitlines()]
    to_lustre = [(local, peer) for local, peer in conns if peer in servers or peer.endswith(":50989")]
    assert to_lustre, ss
    assert all(local.startswith(gpu001.addresses["storage"] + ":") for local, _ in to_lustre), to_lustre


def test_striped_round_trip_getstripe_and_df(netns_lustre: LustreMount) -> None:
    m = netns_lustre
    f = m.mnt / "ckpt" / "shard0"
    f.parent.mkdir()
    m.cli("lustre", "lfs", "setstripe", "-c", "4", "-S", "1M", str(f.parent))
    data = pattern(9 * MiB + 4321, 11)
    with open(f, "wb") as out:
        out.write(data)
        os.fsync(out.fileno())
    assert f.stat().st_size == len(data)
    assert f.read_bytes() == data
    out = m.cli("lustre", "lfs", "getstripe", str(f)).stdout
    assert "lmm_stripe_count:  4\nlmm_stripe_size:   1048576\n" in out
    rows = [line.split() for line in out.splitlines() if line.startswith("\t") and line.split()[0].isdigit()]
    assert sorted(int(r[0]) for r in rows) == [0, 1, 2, 3]
    df = m.cli("lustre", "lfs", "df", "-h", str(m.mnt)).stdout
    for i in range(4):
        assert f"hot-OST{i:04x}_UUID" in df and f"{m.mnt}[OST:{i}]" in df
    assert "filesystem_summary:" in df and "inactive" not in df
    # an OST admin call (the operator port, OOB) and the mount still agree
    m.cli("lustre", "fault", "ost-full", "2")
    m.cli("lustre", "fault", "ost-clear", "2")
    assert f.read_bytes() == data


def test_mount_on_a_host_off_the_storage_network_is_refused(netns_lustre: LustreMount, tmp_path: Path) -> None:
    r = netns_lustre.cli("lustre", "mount", str(tmp_path / "m"), "--host", "pdu-r01-1", check=False)
    assert r.returncode != 0 and "storage network" in r.stderr, r.stderr
    assert not is_mounted(str(tmp_path / "m"))


def test_stage_runs_on_a_client_node_over_the_storage_network(netns_lustre: LustreMount) -> None:
    """The gateway is on the storage segment too: a client in gpu002's namespace uploads, `twin stage`
    (from this machine's shell) runs on gpu001 and copies into the mount, every object verified."""
    netns_lustre.cli("ceph", "user", "create", "--uid", "stager", "--display-name", "Stager",
                     "--access-key", "STAGEAK", "--secret-key", "STAGESK")
    s3 = gateway(netns_lustre.manifest).s3
    assert s3.startswith(f"http://{STORAGE}")
    ns = next(d.netns for d in netns_lustre.manifest.daemons if d.host == "gpu002")
    upload = ("import boto3, sys; s3 = boto3.client('s3', endpoint_url=sys.argv[1], region_name='us-east-1', "
              "aws_access_key_id='STAGEAK', aws_secret_access_key='STAGESK'); "
              "s3.create_bucket(Bucket='dataset'); "
              "[s3.put_object(Bucket='dataset', Key=f'shard/{i:02d}', Body=bytes([i]) * (i * 7919 + 1))"
              " for i in range(12)]")
    subprocess.run(["ip", "netns", "exec", ns, sys.executable, "-c", upload, s3], check=True, timeout=60)
    env = {**os.environ, "AWS_ACCESS_KEY_ID": "STAGEAK", "AWS_SECRET_ACCESS_KEY": "STAGESK"}
    dest = netns_lustre.mnt / "staged"
    r = subprocess.run([TWIN, "stage", "s3://dataset/shard/", str(dest), "-c", "2", "--json", "--run-dir",
                        str(netns_lustre.run)], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["copied"] == 12 and report["md5_verified"] == 12 and not report["failed"], report
    for i in range(12):
        assert (dest / f"{i:02d}").read_bytes() == bytes([i]) * (i * 7919 + 1)
