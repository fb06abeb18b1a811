"""Lustre end to end: `twin up rack --lustre`, a real FUSE mount, real tools, `lfs`, the OSS data
directories, bad input with Lustre's errnos, MDS failover, clean unmount and `twin down`."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from emulator.rundir import RunDir
from services.lustre.client.core import ClientError, LustreClient
from services.lustre.client.mount import is_mounted
from services.lustre.manifest import LustreSection
from services.lustre.oss.objects import object_path
from services.lustre.wire import layout_from_pb, parse_lov_xattr

ROOT = Path(__file__).resolve().parents[2]
TWIN = str(ROOT / ".venv" / "bin" / "twin")
MiB = 1024 * 1024

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not Path("/dev/fuse").exists() or not shutil.which("fusermount3"),
                                reason="needs root, /dev/fuse and fusermount3")


def twin(*args: str, run: Path, check: bool = True) -> subprocess.CompletedProcess:
    """`twin ARGS --run-dir RUN`; with check, a non-zero exit fails with its output."""
    r = subprocess.run([TWIN, *args, "--run-dir", str(run)], capture_output=True, text=True,
                       env=os.environ | {"TWIN_LUSTRE_NVME_SCALE": "0", "COLUMNS": "200"})
    if check and r.returncode != 0:
        raise AssertionError(f"twin {' '.join(args)} -> {r.returncode}\n{r.stdout}\n{r.stderr}")
    return r


@pytest.fixture(scope="module")
def lustre(tmp_path_factory):
    base = tmp_path_factory.mktemp("lustre")
    run, mnt = base / "run", base / "mnt"
    twin("up", "rack", "--lustre", run=run)
    try:
        twin("lustre", "mount", str(mnt), run=run)
        manifest = RunDir(run).load_manifest()
        client = LustreClient.from_manifest(manifest, failover_timeout=20.0)
        yield run, mnt, client, manifest
        client.close()
    finally:
        twin("lustre", "umount", str(mnt), run=run, check=False)
        twin("down", run=run, check=False)
        assert not is_mounted(str(mnt))


def pattern(n: int, seed: int) -> bytes:
    out = bytearray()
    block = hashlib.sha256(str(seed).encode()).digest() * 2048   # 64 KiB
    while len(out) < n:
        out += block
        block = block[1:] + block[:1]
    return bytes(out[:n])


@pytest.mark.parametrize("count", [1, 4, -1])
def test_round_trips_across_stripe_counts(lustre, count):
    run, mnt, client, _ = lustre
    d = mnt / f"rt{count}"
    d.mkdir()
    client.setstripe(f"/rt{count}", count=count, size=MiB)   # the directory default, inherited by new files
    for i, n in enumerate([0, 1, MiB + 1, 64 * MiB]):
        data = pattern(n, i)
        p = d / f"f{n}"
        with open(p, "wb") as f:
            f.write(data)
        assert p.stat().st_size == n
        assert p.read_bytes() == data
        a = client.getattr(f"/rt{count}/f{n}")
        assert a.size == n
        assert len(a.layout.objects) == (4 if count == -1 else count)


def test_cp_dd_rsync_python(lustre, tmp_path):
    run, mnt, client, _ = lustre
    src = tmp_path / "src.bin"
    src.write_bytes(pattern(5 * MiB + 123, 7))
    (mnt / "tools").mkdir()
    subprocess.run(["cp", str(src), str(mnt / "tools" / "cp.bin")], check=True)
    subprocess.run(["dd", f"if={src}", f"of={mnt / 'tools' / 'dd.bin'}", "bs=1M", "conv=fsync", "status=none"],
                   check=True)
    (tmp_path / "tree" / "sub").mkdir(parents=True)
    for i in range(5):
        (tmp_path / "tree" / "sub" / f"{i}.txt").write_text(f"file {i}\n" * (i * 1000))
    subprocess.run(["rsync", "-a", f"{tmp_path / 'tree'}/", str(mnt / "tools" / "tree")], check=True)
    for name in ("cp.bin", "dd.bin"):
        subprocess.run(["cmp", str(src), str(mnt / "tools" / name)], check=True)
    r = subprocess.run(["diff", "-r", str(tmp_path / "tree"), str(mnt / "tools" / "tree")], capture_output=True)
    assert r.returncode == 0, r.stdout
    # a second rsync finds nothing to do; rename, truncate, chmod, utime, unlink
    r = subprocess.run(["rsync", "-ai", f"{tmp_path / 'tree'}/", str(mnt / "tools" / "tree")], capture_output=True,
                       text=True, check=True)
    assert r.stdout.strip() == ""
    p = mnt / "tools" / "cp.bin"
    os.rename(p, mnt / "tools" / "moved.bin")
    os.truncate(mnt / "tools" / "moved.bin", 1000)
    assert (mnt / "tools" / "moved.bin").read_bytes() == src.read_bytes()[:1000]
    os.chmod(mnt / "tools" / "moved.bin", 0o600)
    os.utime(mnt / "tools" / "moved.bin", (1_000_000, 2_000_000))
    st = (mnt / "tools" / "moved.bin").stat()
    assert (st.st_mode & 0o777, int(st.st_mtime)) == (0o600, 2_000_000)
    os.unlink(mnt / "tools" / "moved.bin")
    assert sorted(os.listdir(mnt / "tools")) == ["dd.bin", "tree"]


def test_fio_sequential_and_random(lustre):
    run, mnt, client, _ = lustre
    (mnt / "fio").mkdir()
    client.setstripe("/fio", count=4, size=MiB)
    r = subprocess.run(["fio", f"--directory={mnt / 'fio'}", "--size=32M", "--filename=data",
                        "--name=seqw", "--rw=write", "--bs=1M", "--end_fsync=1",
                        "--name=seqr", "--stonewall", "--rw=read", "--bs=1M",
                        "--name=randw", "--stonewall", "--rw=randwrite", "--bs=64k", "--verify=crc32c",
                        "--name=randr", "--stonewall", "--rw=randread", "--bs=64k",
                        "--verify_state_save=0", "--output-format=json"], capture_output=True, text=True, timeout=180,
                       cwd=mnt / "fio")   # fio leaves a verify state file in its working directory
    assert r.returncode == 0, r.stderr
    jobs = json.loads(r.stdout[r.stdout.index("{"):])["jobs"]
    assert all(j["error"] == 0 for j in jobs)


def test_getstripe_agrees_with_oss_data_dirs(lustre):
    run, mnt, client, manifest = lustre
    f = mnt / "striped.bin"
    r = twin("lustre", "lfs", "setstripe", "-c", "4", "-S", "1M", str(f), run=run)
    assert r.returncode == 0, r.stderr
    data = pattern(9 * MiB + 17, 3)
    f.write_bytes(data)
    out = twin("lustre", "lfs", "getstripe", str(f), run=run).stdout
    assert out.startswith(f"{f}\nlmm_stripe_count:  4\nlmm_stripe_size:   1048576\nlmm_pattern:       raid0\n")
    rows = [tuple(int(x, 0) for x in line.split()) for line in out.splitlines() if re.match(r"^\t\s+\d", line)]
    assert len(rows) == 4 and len({r[0] for r in rows}) == 4
    layout = layout_from_pb(client.getattr("/striped.bin").layout)
    dirs = {o.index: Path(o.dir) for o in LustreSection.require(manifest, run).osts}
    rebuilt = bytearray(len(data))
    for slot, (ost, objid, _hex, seq) in enumerate(rows):
        path = object_path(dirs[ost], seq, objid)
        assert path.exists(), path
        assert path.stat().st_size == layout.object_size(slot, len(data))
        obj = path.read_bytes()
        for e in layout.extents(0, len(data)):
            if e.slot == slot:
                rebuilt[e.file_offset:e.file_offset + e.length] = obj[e.object_offset:e.object_offset + e.length]
    assert bytes(rebuilt) == data
    lov, _fid = parse_lov_xattr(os.getxattr(f, "lustre.lov"))
    assert [(o.ost, o.objid) for o in lov.objects] == [(r[0], r[1]) for r in rows]
    df = twin("lustre", "lfs", "df", "-h", str(mnt), run=run).stdout
    assert "hot-OST0003_UUID" in df and "filesystem_summary:" in df
    assert "OBDS:\n0: hot-OST0000_UUID ACTIVE" in twin("lustre", "lfs", "osts", run=run).stdout
    found = twin("lustre", "lfs", "find", str(mnt), "--stripe-count", "4", "--name", "striped*", run=run).stdout
    assert found.split() == [str(f)]


def test_concurrent_writers(lustre):
    run, mnt, client, _ = lustre
    (mnt / "conc").mkdir()
    errors = []

    def writer(i: int) -> None:
        try:
            with open(mnt / "conc" / f"w{i}", "wb") as f:
                for k in range(8):
                    f.write(pattern(MiB, i * 100 + k))
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for i in range(6):
        assert (mnt / "conc" / f"w{i}").read_bytes() == b"".join(pattern(MiB, i * 100 + k) for k in range(8))


def test_bad_input_errnos(lustre):
    run, mnt, client, _ = lustre
    r = twin("lustre", "lfs", "setstripe", "-S", "100k", str(mnt / "bad1"), run=run, check=False)
    assert r.returncode == errno.EINVAL and "Invalid argument" in r.stderr
    r = twin("lustre", "lfs", "setstripe", "-c", "-2", str(mnt / "bad2"), run=run, check=False)
    assert r.returncode == errno.EINVAL
    r = twin("lustre", "lfs", "setstripe", "-i", "99", str(mnt / "bad3"), run=run, check=False)
    assert r.returncode == errno.EINVAL
    (mnt / "full").write_bytes(b"x" * 100)
    r = twin("lustre", "lfs", "setstripe", "-c", "2", str(mnt / "full"), run=run, check=False)
    assert r.returncode == errno.EEXIST
    assert not (mnt / "bad1").exists()
    # a full OST: ENOSPC for writes to its objects, and new files avoid it
    client.setstripe("/onost0", count=1, index=0)
    client.oss_admin(0, capacity_bytes=8 * MiB)
    try:
        with pytest.raises(OSError) as e, open(mnt / "onost0", "wb") as f:
            for _ in range(16):
                f.write(b"\0" * MiB)
                f.flush()
                os.fsync(f.fileno())
        assert e.value.errno == errno.ENOSPC
        time.sleep(1.5)   # the MDS's next statfs poll sees OST0000 full
        for i in range(4):
            a = client.create(f"/after-full-{i}")
            assert 0 not in [o.ost for o in a.layout.objects]
    finally:
        client.oss_admin(0, capacity_bytes=int(3.84e12))


def test_mds_failover_keeps_namespace(lustre):
    """The standby serves what the active acknowledged. A tunable set on the active MDT without -P
    (mdd.*.atime_diff) is not the new one's: it has the default again, and the mount, which sends a
    read's atime by the MDT's value, learns it when its lock stream reaches the new MDS."""
    run, mnt, client, manifest = lustre
    (mnt / "ha").mkdir()
    (mnt / "ha" / "before").write_bytes(b"acknowledged")
    aged = mnt / "ha" / "aged"
    aged.write_bytes(b"read me")
    two_hours_ago = time.time() - 7200
    os.utime(aged, (two_hours_ago, two_hours_ago))
    twin("lustre", "lctl", "set_param", "mdd.*.atime_diff=10800", run=run)
    atime = client.getattr("/ha/aged").atime_ns
    assert aged.read_bytes() == b"read me"
    assert client.getattr("/ha/aged").atime_ns == atime   # 2 h < 3 h: the MDT keeps the old one
    status = json.loads((run / "daemons.json").read_text())["daemons"]
    active = None
    for m in manifest.daemons_of("lustre_mds"):
        import grpc

        from clustertwin.v1 import lustre_pb2 as pb
        from clustertwin.v1 import lustre_pb2_grpc as pb_grpc
        with grpc.insecure_channel(m.grpc) as ch:
            if pb_grpc.LustreMdsStub(ch).Status(pb.LustreMdsStatusRequest(), timeout=5).role == "active":
                active = m.name
    assert active is not None
    os.kill(status[active]["pid"], signal.SIGKILL)
    time.sleep(0.2)
    (mnt / "ha" / "after").write_bytes(b"written after failover")   # blocks until the standby serves
    assert sorted(os.listdir(mnt / "ha")) == ["after", "aged", "before"]
    assert (mnt / "ha" / "before").read_bytes() == b"acknowledged"
    with pytest.raises(ClientError) as e:
        client.getattr("/ha/missing")
    assert e.value.errno == errno.ENOENT
    assert twin("lustre", "lctl", "get_param", "mdd.*.atime_diff", run=run).stdout.endswith(".atime_diff=60\n")

    def read_moved_it() -> bool:
        assert aged.read_bytes() == b"read me"
        return client.getattr("/ha/aged").atime_ns > atime
    deadline = time.monotonic() + 30   # the lock stream comes back after the filesystem calls do
    while not read_moved_it():
        assert time.monotonic() < deadline, "the mount still sends reads by the old MDS's atime_diff"
        time.sleep(0.2)


def test_one_gib_round_trip_stripe_count_4(lustre):
    """1 GiB written and read back through the mount, byte for byte (every 4 MiB block distinct)."""
    run, mnt, client, _ = lustre
    base = bytearray(pattern(4 * MiB, 99))
    twin("lustre", "lfs", "setstripe", "-c", "4", str(mnt / "gib"), run=run)

    def block(i: int) -> bytes:
        base[:8] = i.to_bytes(8, "little")
        return bytes(base)

    t0 = time.monotonic()
    with open(mnt / "gib", "r+b", buffering=0) as f:
        for i in range(256):
            f.write(block(i))
    with open(mnt / "gib", "rb", buffering=0) as f:
        for i in range(256):
            assert f.read(4 * MiB) == block(i), f"block {i}"
        assert f.read(1) == b""
    took = time.monotonic() - t0
    assert client.getattr("/gib").size == 1024 * MiB
    assert len(client.getattr("/gib").layout.objects) == 4
    (mnt / "gib").unlink()
    print(f"1 GiB round trip in {took:.1f} s")


def test_oss_failover_mid_write_keeps_acknowledged_data(lustre):
    """oss01 killed while a writer fsyncs block after block: its partner takes its OSTs over, the writer
    blocks and goes on, and every block acknowledged (fsynced) reads back; then failback."""
    run, mnt, client, manifest = lustre
    events = subprocess.Popen([TWIN, "events", "--run-dir", str(run)], stdout=subprocess.PIPE, text=True,
                              env=os.environ | {"COLUMNS": "400"})
    path = mnt / "failover.bin"
    twin("lustre", "lfs", "setstripe", "-c", "-1", "-S", "1M", str(path), run=run)
    acked: list[bytes] = []
    killed = threading.Event()

    def kill_soon() -> None:
        while len(acked) < 8:
            time.sleep(0.01)
        twin("lustre", "fault", "oss-kill", "oss01", run=run)
        killed.set()

    killer = threading.Thread(target=kill_soon)
    killer.start()
    try:
        with open(path, "wb", buffering=0) as f:
            for i in range(40):
                data = pattern(MiB, 1000 + i)
                f.write(data)
                os.fsync(f.fileno())
                acked.append(data)
                if i == 20:
                    assert killed.wait(60)
        killer.join()
        assert path.read_bytes() == b"".join(acked)
        a = client.getattr("/failover.bin")
        assert {o.ost for o in a.layout.objects} == {0, 1, 2, 3}
        # the partner serves OST0000 and OST0001 (the MDS polls each second); generous, as CI runs beside other load
        deadline = time.monotonic() + 60
        while {t.index: t.server for t in client.statfs().osts if t.active}.get(0) != "oss02":
            assert time.monotonic() < deadline
            time.sleep(0.2)
        assert "inactive" not in twin("lustre", "lfs", "df", run=run).stdout
    finally:
        twin("lustre", "fault", "oss-start", "oss01", run=run, check=False)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:   # failback: oss01 serves its own OSTs again
        st = {t.index: t.server for t in client.statfs().osts}
        if st.get(0) == "oss01" and st.get(1) == "oss01":
            break
        time.sleep(0.2)
    assert st.get(0) == "oss01", st
    assert path.read_bytes() == b"".join(acked)
    events.terminate()
    seen = events.communicate(timeout=10)[0]
    for kind in ("oss_down", "oss_failover", "oss_up", "oss_failback"):
        assert f"/{kind}" in seen, (kind, seen[-2000:])


def test_no_failover_partner_means_eio():
    """An OST whose only OSS does not answer: the client blocks for its failover timeout, then EIO."""
    from clustertwin.v1 import lustre_pb2 as pb

    c = LustreClient(["127.0.0.1:9"], {0: ["127.0.0.1:9"]}, failover_timeout=0.5)
    t0 = time.monotonic()
    with pytest.raises(ClientError) as e:
        c.osts[0].call("Read", pb.LustreOssReadRequest(obj=pb.LustreObjectRef(ost=0, objid=1, seq=1), length=1))
    assert e.value.errno == errno.EIO and time.monotonic() - t0 >= 0.5
    c.close()


def test_fault_cli_errors(lustre):
    run, *_ = lustre
    r = twin("lustre", "fault", "oss-kill", "oss99", run=run, check=False)
    assert r.returncode == 2 and "oss01" in r.stderr
    r = twin("lustre", "fault", "ost-full", "42", run=run, check=False)
    assert r.returncode == 22 and "no OST index 42" in r.stderr
    r = twin("lustre", "fault", "oss-start", "oss02", run=run, check=False)
    assert r.returncode == 1 and "no oss-kill fault" in r.stderr


def test_unmount_and_down_leave_no_mount(tmp_path):
    run, mnt = tmp_path / "run", tmp_path / "mnt"
    twin("up", "mini", "--lustre", run=run)
    try:
        twin("lustre", "mount", str(mnt), run=run)
        (mnt / "x").write_text("hi")
        twin("lustre", "umount", str(mnt), run=run)
        assert not is_mounted(str(mnt))
        twin("lustre", "mount", str(mnt), run=run)
        assert (mnt / "x").read_text() == "hi"   # durable across client mounts
        rec = json.loads(next((run / "mounts").glob("lustre-*.json")).read_text())
        os.kill(rec["pid"], signal.SIGKILL)       # a crashed client leaves a stale mount behind ...
        time.sleep(0.3)
    finally:
        twin("down", run=run)
    assert not is_mounted(str(mnt))               # ... which `twin down` removes
    assert str(mnt) not in Path("/proc/mounts").read_text()
