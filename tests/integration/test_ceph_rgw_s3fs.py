"""s3fs-fuse, unchanged, over the gateway (in-process Ceph cluster, EC 8+3): a bucket mounted as a file
system, files written, renamed, appended, truncated, chmod-ed, symlinked and removed with ordinary
file calls; what boto3 sees of them (sizes, ETags, s3fs's x-amz-meta-* attributes, multipart for big
files); what a second mount sees; and a wrong secret refused at mount time."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
from botocore.client import BaseClient
from botocore.config import Config

from services.ceph.rgw.cluster_setup import DATA_POOL, INDEX_POOL, rgw_cluster
from services.ceph.rgw.gateway import Gateway
from services.ceph.rgw.http import RunningServer, start_in_thread
from services.ceph.rgw.users import User, Users

FS = User("fsuser", "FS User", "AKIAS3FSTEST0000", "s3fs-test-secret")
MiB = 1 << 20

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not Path("/dev/fuse").exists() or not shutil.which("s3fs"),
                                reason="needs root, /dev/fuse and s3fs (apt s3fs, installed by `make install`)")


@pytest.fixture(scope="module")
def gateway() -> Iterator[RunningServer]:
    server = start_in_thread(Gateway(rgw_cluster(12), Users([FS]), DATA_POOL, INDEX_POOL, op_timeout=2.0))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def s3(gateway: RunningServer) -> BaseClient:
    c = boto3.client("s3", endpoint_url=f"http://127.0.0.1:{gateway.port}", region_name="us-east-1",
                     aws_access_key_id=FS.access_key, aws_secret_access_key=FS.secret_key,
                     config=Config(s3={"addressing_style": "path"}))
    c.create_bucket(Bucket="fsdata")
    return c


def mount(gateway: RunningServer, where: Path, secret: str = FS.secret_key) -> subprocess.CompletedProcess[str]:
    where.mkdir(parents=True, exist_ok=True)
    pw = where.parent / f"{where.name}.passwd"
    pw.write_text(f"{FS.access_key}:{secret}\n")
    pw.chmod(0o600)
    return subprocess.run(
        ["s3fs", "fsdata", str(where), "-o", f"url=http://127.0.0.1:{gateway.port}", "-o", "use_path_request_style",
         "-o", f"passwd_file={pw}", "-o", "endpoint=us-east-1", "-o", "stat_cache_expire=1",
         "-o", "multipart_size=5", "-o", f"logfile={where.parent / (where.name + '.log')}"],
        capture_output=True, text=True, timeout=60)


def unmount(where: Path) -> None:
    subprocess.run(["umount", str(where)], capture_output=True, timeout=30)


@pytest.fixture(scope="module")
def mnt(gateway: RunningServer, s3: BaseClient, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    where = tmp_path_factory.mktemp("s3fs") / "mnt"
    r = mount(gateway, where)
    assert r.returncode == 0, r.stderr
    assert os.path.ismount(where)
    yield where
    unmount(where)
    assert not os.path.ismount(where)


def md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


def test_files_written_through_the_mount_are_s3_objects(mnt: Path, s3: BaseClient) -> None:
    (mnt / "hello.txt").write_text("hello\n")
    (mnt / "shards").mkdir()
    big = os.urandom(12 * MiB + 3)  # above multipart_size: s3fs uploads it in parts
    (mnt / "shards" / "shard-0.bin").write_bytes(big)
    objs = {o["Key"]: o for o in s3.list_objects_v2(Bucket="fsdata")["Contents"]}
    assert {"hello.txt", "shards/", "shards/shard-0.bin"} <= set(objs)
    assert s3.get_object(Bucket="fsdata", Key="hello.txt")["Body"].read() == b"hello\n"
    assert s3.get_object(Bucket="fsdata", Key="shards/shard-0.bin")["Body"].read() == big
    assert re.fullmatch(r'"[0-9a-f]{32}-[2-9]"', objs["shards/shard-0.bin"]["ETag"])  # multipart: MD5 of MD5s-parts
    meta = s3.head_object(Bucket="fsdata", Key="hello.txt")["Metadata"]
    assert int(meta["mode"]) & 0o777 == 0o644 and "mtime" in meta  # s3fs keeps POSIX attributes as x-amz-meta-*


def test_objects_written_with_boto3_read_through_the_mount(mnt: Path, s3: BaseClient) -> None:
    body = os.urandom(3 * MiB)
    s3.put_object(Bucket="fsdata", Key="from-boto3/data.bin", Body=body)
    time.sleep(1.2)  # stat_cache_expire
    assert "from-boto3" in os.listdir(mnt)
    assert (mnt / "from-boto3" / "data.bin").read_bytes() == body
    with (mnt / "from-boto3" / "data.bin").open("rb") as f:  # ranged GETs
        f.seek(MiB + 17)
        assert f.read(4096) == body[MiB + 17: MiB + 17 + 4096]


def test_rename_append_truncate_chmod_symlink_remove(mnt: Path, s3: BaseClient) -> None:
    src = mnt / "ckpt.bin"
    src.write_bytes(os.urandom(7 * MiB))
    digest = md5(src)
    src.rename(mnt / "shards" / "ckpt-renamed.bin")  # a server-side copy, then a delete
    moved = mnt / "shards" / "ckpt-renamed.bin"
    assert not src.exists() and md5(moved) == digest
    with moved.open("ab") as f:
        f.write(b"tail")
    assert moved.stat().st_size == 7 * MiB + 4
    os.truncate(moved, 1000)
    assert moved.read_bytes() == s3.get_object(Bucket="fsdata", Key="shards/ckpt-renamed.bin")["Body"].read()
    assert moved.stat().st_size == 1000
    moved.chmod(0o600)
    assert int(s3.head_object(Bucket="fsdata", Key="shards/ckpt-renamed.bin")["Metadata"]["mode"]) & 0o777 == 0o600
    (mnt / "latest").symlink_to("shards/ckpt-renamed.bin")
    assert os.readlink(mnt / "latest") == "shards/ckpt-renamed.bin"
    assert (mnt / "latest").read_bytes()[:10] == moved.read_bytes()[:10]
    (mnt / "latest").unlink()
    moved.unlink()
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket="fsdata").get("Contents", [])]
    assert "shards/ckpt-renamed.bin" not in keys and "latest" not in keys and "ckpt.bin" not in keys


def test_a_second_mount_sees_the_same_tree(mnt: Path, gateway: RunningServer, tmp_path: Path) -> None:
    other = tmp_path / "mnt2"
    r = mount(gateway, other)
    assert r.returncode == 0, r.stderr
    try:
        assert sorted(os.listdir(other)) == sorted(os.listdir(mnt))
        assert md5(other / "shards" / "shard-0.bin") == md5(mnt / "shards" / "shard-0.bin")
    finally:
        unmount(other)


def test_wrong_secret_is_refused(gateway: RunningServer, tmp_path: Path) -> None:
    where = tmp_path / "bad"
    mount(gateway, where, secret="not-the-secret")
    try:
        assert not os.path.ismount(where)
        log = (tmp_path / "bad.log").read_text()
        assert "Failed to connect by sigv4" in log  # SigV4 refused, and then SigV2 too:
        assert "invalid credentials" in log, log[-2000:]
    finally:
        if os.path.ismount(where):
            unmount(where)
