"""`twin stage`: a dataset from the twin's Ceph S3 gateway into its Lustre mount (`twin up mini --ceph
--lustre`), checked byte for byte; resume after a kill -9 copies only what is missing or changed; an
OSS (and an OSD) killed mid-copy does not stop it."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from boto3.s3.transfer import TransferConfig

from emulator.client import Twin
from services.lustre.client.core import LustreClient
from services.lustre.client.mount import is_mounted
from workloads.stage.job import JOURNAL

ROOT = Path(__file__).resolve().parents[2]
TWIN = str(ROOT / ".venv" / "bin" / "twin")
AK, SK = "AKSTAGE", "sk-stage-secret"
KiB, MiB = 1024, 1024 * 1024

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not Path("/dev/fuse").exists() or not shutil.which("fusermount3"),
                                reason="needs root, /dev/fuse and fusermount3")

ENV = os.environ | {"TWIN_LUSTRE_NVME_SCALE": "0", "COLUMNS": "200", "AWS_ACCESS_KEY_ID": AK,
                    "AWS_SECRET_ACCESS_KEY": SK}


def twin(*args: str, run: Path, check: bool = True) -> subprocess.CompletedProcess:
    r = subprocess.run([TWIN, *args, "--run-dir", str(run)], capture_output=True, text=True, env=ENV)
    if check and r.returncode != 0:
        raise AssertionError(f"twin {' '.join(args)} -> {r.returncode}\n{r.stdout}\n{r.stderr}")
    return r


def body(i: int, n: int) -> bytes:
    block = hashlib.sha256(f"obj{i}".encode()).digest() * 2048   # 64 KiB
    return (block * (n // len(block) + 1))[:n]


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    base = tmp_path_factory.mktemp("stage")
    run, mnt = base / "run", base / "mnt"
    twin("up", "mini", "--ceph", "--lustre", run=run)
    try:
        twin("lustre", "mount", str(mnt), run=run)
        twin("ceph", "user", "create", "--uid", "stager", "--display-name", "Stager", "--access-key", AK,
             "--secret", SK, run=run)
        sdk = Twin.connect(run)
        s3 = sdk.s3(AK, SK)
        s3.create_bucket(Bucket="datasets")
        objects = {}
        for i in range(24):   # 0 B .. 1.5 MiB, some in a subdirectory
            key = f"run1/{'shard/' if i % 3 == 0 else ''}part-{i:03d}.bin"
            objects[key] = body(i, [0, 1, 100 * KiB, MiB + 7, 3 * MiB // 2][i % 5])
            s3.put_object(Bucket="datasets", Key=key, Body=objects[key])
        # multipart uploads: one with the content MD5 in its metadata, one without
        tc = TransferConfig(multipart_threshold=5 * MiB, multipart_chunksize=5 * MiB)
        for key, meta in (("run1/big-md5.bin", True), ("run1/big-plain.bin", False)):
            data = body(hash(key) % 1000, 11 * MiB + 3)
            extra = {"Metadata": {"md5": hashlib.md5(data).hexdigest()}} if meta else {}
            tmp = base / "upload.bin"
            tmp.write_bytes(data)
            s3.upload_file(str(tmp), "datasets", key, ExtraArgs=extra, Config=tc)
            objects[key] = data
        client = LustreClient.from_manifest(sdk.manifest, failover_timeout=20.0)
        yield run, mnt, s3, objects, client
        client.close()
    finally:
        twin("lustre", "umount", str(mnt), run=run, check=False)
        twin("down", run=run, check=False)
        assert not is_mounted(str(mnt))


def stage(run: Path, *args: str) -> dict:
    r = twin("stage", *args, "--json", run=run)
    return json.loads(r.stdout)


def check_bytes(dest: Path, objects: dict[str, bytes], prefix: str = "run1/") -> None:
    for key, data in objects.items():
        p = dest / key[len(prefix):]
        assert p.read_bytes() == data, key
    assert not list(dest.rglob("*.stage-part"))


def test_stage_copies_verifies_and_sets_the_layout(env):
    run, mnt, _s3, objects, client = env
    rep = stage(run, "s3://datasets/run1/", str(mnt / "ds1"), "--workers", "4", "--stripe-count", "2",
                "--stripe-size", "1M")
    assert rep["listed"] == rep["copied"] == len(objects) and not rep["failed"]
    assert rep["md5_verified"] == len(objects) - 1 and rep["size_verified"] == 1   # big-plain.bin: no MD5 stored
    check_bytes(mnt / "ds1", objects)
    a = client.getattr("/ds1/big-md5.bin")
    assert len(a.layout.objects) == 2 and a.layout.stripe_size == MiB
    assert client.getattr("/ds1/shard").default_spec.count == 2   # directories staging made get the layout too
    # a second run copies nothing; a changed object is copied again
    assert stage(run, "s3://datasets/run1/", str(mnt / "ds1"))["copied"] == 0
    env[2].put_object(Bucket="datasets", Key="run1/part-001.bin", Body=b"changed")
    objects["run1/part-001.bin"] = b"changed"
    rep = stage(run, "s3://datasets/run1/", str(mnt / "ds1"))
    assert (rep["copied"], rep["skipped"]) == (1, len(objects) - 1)
    check_bytes(mnt / "ds1", objects)


def test_bad_input(env):
    run, mnt, *_ = env
    r = twin("stage", "datasets/run1", str(mnt / "x"), run=run, check=False)
    assert r.returncode == 2 and "s3://BUCKET" in r.stderr
    r = twin("stage", "s3://datasets/run1/", str(mnt / "x"), "--stripe-size", "100k", run=run, check=False)
    assert r.returncode == 22 and "64 KiB" in r.stderr
    r = twin("stage", "s3://no-such-bucket/", str(mnt / "y"), run=run, check=False)
    assert r.returncode == 1 and "NoSuchBucket" in r.stderr


def _start(run: Path, dest: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen([TWIN, "stage", "s3://datasets/run1/", str(dest), "--json", "--run-dir", str(run), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV,
                            start_new_session=True)


def _journal_lines(dest: Path) -> int:
    try:
        return (dest / JOURNAL).read_text().count("\n")
    except OSError:
        return 0


def test_resume_after_kill_copies_only_what_is_missing(env):
    run, mnt, _s3, objects, _ = env
    dest = mnt / "ds2"
    p = _start(run, dest, "--workers", "1")
    deadline = time.monotonic() + 60
    while _journal_lines(dest) < 6 and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    done = _journal_lines(dest)
    assert 6 <= done < len(objects)
    rep = stage(run, "s3://datasets/run1/", str(dest))
    assert rep["skipped"] >= done and rep["copied"] == len(objects) - rep["skipped"] and not rep["failed"]
    check_bytes(dest, objects)


def test_oss_and_osd_killed_mid_copy(env):
    run, mnt, _s3, objects, _ = env
    dest = mnt / "ds3"
    p = _start(run, dest, "--workers", "2", "--stripe-count", "-1")
    deadline = time.monotonic() + 60
    while _journal_lines(dest) < 3 and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    try:
        twin("lustre", "fault", "oss-kill", "oss01", run=run)
        twin("ceph", "osd", "kill", "3", run=run)
        out, err = p.communicate(timeout=120)
    finally:
        twin("lustre", "fault", "oss-start", "oss01", run=run, check=False)
    assert p.returncode == 0, err
    rep = json.loads(out)
    assert rep["copied"] == len(objects) and not rep["failed"]
    check_bytes(dest, objects)
