"""The client's write-behind and its tunables through a real mount (`twin up rack --lustre`, `twin lustre
mount`): small writes stay in the client until fsync or close, which send them in RPCs and return once
the OSTs have them; an OSS failover after fsync loses nothing; `twin lustre lctl get_param|set_param`
shows the tunables under Lustre's names and changes the live client."""

from __future__ import annotations

import errno
import os
import re
import time
from collections.abc import Iterator

import pytest

from emulator.rundir import RunDir
from services.lustre.client.core import LustreClient
from services.lustre.client.stats import COUNTERS as STATS_COUNTERS
from services.lustre.wire import layout_from_pb
from tests.lustre.conftest import LustreMount, MiB, lustre_mount, needs_fuse, pattern, with_second_mount

pytestmark = needs_fuse


@pytest.fixture(scope="module")
def lustre(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LustreMount, LustreClient]]:
    for m in lustre_mount(tmp_path_factory.mktemp("lustre-cache"), "rack"):
        client = LustreClient.from_manifest(RunDir(m.run).load_manifest(), failover_timeout=30.0)
        yield m, client
        client.close()


def on_osts(client: LustreClient, path: str, n: int) -> bytes:
    """The first n bytes of a file as its OST objects hold them now (not through any client cache)."""
    a = client.getattr(path)
    return client.read(layout_from_pb(a.layout), 0, n, n)


def test_small_writes_wait_in_the_client_until_fsync_and_close(lustre):
    m, client = lustre
    m.cli("lustre", "lfs", "setstripe", "-c", "1", str(m.mnt / "small.log"))
    lines = [f"line {i:05d} ".encode().ljust(100, b".") for i in range(2000)]
    fd = os.open(m.mnt / "small.log", os.O_WRONLY)
    try:
        for line in lines[:1000]:
            assert os.write(fd, line) == 100
        assert on_osts(client, "/small.log", 100_000) != b"".join(lines[:1000])   # dirty in the client
        os.fsync(fd)
        assert on_osts(client, "/small.log", 100_000) == b"".join(lines[:1000])
        assert client.getattr("/small.log").size == 100_000
        for line in lines[1000:]:
            os.write(fd, line)
    finally:
        os.close(fd)
    assert on_osts(client, "/small.log", 200_000) == b"".join(lines)   # close sent the rest
    assert client.getattr("/small.log").size == 200_000
    assert (m.mnt / "small.log").read_bytes() == b"".join(lines)


def test_overwrites_and_scattered_writes_read_back(lustre):
    """Writes that overlap, fill holes, and cross stripes (stripe count 4), in any order, then a read
    through the same open file (which sends the dirty data first)."""
    m, client = lustre
    m.cli("lustre", "lfs", "setstripe", "-c", "4", "-S", "1M", str(m.mnt / "scatter.bin"))
    expect = bytearray(6 * MiB)
    with open(m.mnt / "scatter.bin", "r+b", buffering=0) as f:
        for i, off in enumerate([5 * MiB - 7, 0, 3 * MiB + 100, MiB - 50, 3 * MiB, 2 * MiB + 4096, 40]):
            data = pattern(700_000 if i % 2 else 3000, i)
            f.seek(off)
            f.write(data)
            expect[off:off + len(data)] = data
        f.seek(0)
        got = f.read()
    end = 5 * MiB - 7 + 3000
    assert got == bytes(expect[:end])
    assert (m.mnt / "scatter.bin").read_bytes() == bytes(expect[:end])
    assert on_osts(client, "/scatter.bin", end) == bytes(expect[:end])


def test_fsync_then_oss_failover_loses_nothing(lustre):
    """Data fsynced to OST0000, then its OSS (oss01) killed: its partner serves the OST and every byte
    is there; the file closes cleanly (nothing was left to send)."""
    m, client = lustre
    path = m.mnt / "durable.bin"
    m.cli("lustre", "lfs", "setstripe", "-c", "1", "-i", "0", str(path))
    data = b"".join(pattern(100, i) for i in range(3000)) + pattern(3 * MiB, 9)
    fd = os.open(path, os.O_WRONLY)
    for i in range(3000):
        os.write(fd, data[i * 100:(i + 1) * 100])
    os.write(fd, data[300_000:])
    os.fsync(fd)
    m.cli("lustre", "fault", "oss-kill", "oss01")
    try:
        assert on_osts(client, "/durable.bin", len(data)) == data   # from oss02, after the failover
    finally:
        os.close(fd)
        m.cli("lustre", "fault", "oss-start", "oss01", check=False)
    assert client.getattr("/durable.bin").size == len(data)
    deadline = time.monotonic() + 60
    while {t.index: t.server for t in client.statfs().osts}.get(0) != "oss01":   # failback, for the tests after
        assert time.monotonic() < deadline
        time.sleep(0.2)


LINE = re.compile(r"^(osc\.hot-OST000[0-3]-osc|mdc\.hot-MDT0000-mdc|llite\.hot)-ffff[0-9a-f]{12}\.\w+=\d+$")


def test_lctl_get_param_names_and_format(lustre):
    m, _ = lustre
    out = m.cli("lustre", "lctl", "get_param", "osc.*.max_dirty_mb", "osc.*.max_rpcs_in_flight",
                "mdc.*.max_rpcs_in_flight", "llite.*.max_read_ahead_mb", "llite.*.statahead_max").stdout
    lines = out.splitlines()
    assert all(LINE.match(line) for line in lines), out
    assert sum(".max_dirty_mb=2000" in line for line in lines) == 4
    assert sum(line.startswith("osc.") and ".max_rpcs_in_flight=8" in line for line in lines) == 4
    assert sum(line.startswith("mdc.") for line in lines) == 1
    assert m.cli("lustre", "lctl", "get_param", "-n", "llite.*.statahead_max").stdout == "32\n"
    assert m.cli("lustre", "lctl", "get_param", "-N", "mdc.*.max_rpcs_in_flight").stdout.strip().endswith(
        ".max_rpcs_in_flight")
    r = m.cli("lustre", "lctl", "get_param", "osc.*.max_dirt_mb", check=False)
    assert r.returncode == errno.ENOENT
    assert "error: get_param: param_path 'osc/*/max_dirt_mb': No such file or directory" in r.stderr


def test_set_param_changes_the_live_client(lustre):
    """max_dirty_mb=0: no write-behind, a write() is on the OST when it returns; bad values change nothing."""
    m, client = lustre
    for bad in ("osc.*.max_dirty_mb=-1", "osc.*.max_dirty_mb=lots", "osc.*.max_dirty_mb=4096"):
        r = m.cli("lustre", "lctl", "set_param", bad, check=False)
        assert r.returncode == errno.EINVAL and "Invalid argument" in r.stderr, (bad, r.stderr)
    r = m.cli("lustre", "lctl", "set_param", "osc.*.max_dirty_mb=0", "nosuch.*.param=1", check=False)
    assert r.returncode == errno.ENOENT
    assert set(m.cli("lustre", "lctl", "get_param", "-n", "osc.*.max_dirty_mb").stdout.split()) == {"2000"}
    out = m.cli("lustre", "lctl", "set_param", "osc.*.max_dirty_mb=0").stdout
    assert len(out.splitlines()) == 4 and all(line.endswith(".max_dirty_mb=0") for line in out.splitlines())
    try:
        m.cli("lustre", "lfs", "setstripe", "-c", "1", str(m.mnt / "through.log"))
        fd = os.open(m.mnt / "through.log", os.O_WRONLY)
        try:
            os.write(fd, b"a" * 100)
            os.write(fd, b"b" * 100)
            assert on_osts(client, "/through.log", 200) == b"a" * 100 + b"b" * 100
        finally:
            os.close(fd)
    finally:
        m.cli("lustre", "lctl", "set_param", "osc.*.max_dirty_mb=2000")
    fd = os.open(m.mnt / "through.log", os.O_WRONLY)   # not O_APPEND: that is written through (fuse.py)
    try:
        os.pwrite(fd, b"c" * 100, 200)
        assert on_osts(client, "/through.log", 300)[200:] == bytes(100)   # buffered again
    finally:
        os.close(fd)
    assert (m.mnt / "through.log").read_bytes() == b"a" * 100 + b"b" * 100 + b"c" * 100


STATS_HEADER = re.compile(r"^(snapshot_time|start_time|elapsed_time) +\d+\.\d{9} secs\.nsecs$")
STATS_LINE = re.compile(r"^(\w+) +(\d+) samples \[(bytes|usecs)\] (\d+) (\d+) (\d+) (\d+)$")


def llite_stats(m: LustreMount) -> dict[str, tuple[int, ...]]:
    """`lctl get_param llite.*.stats` of the one mount, checked line by line: name -> (count, min, max, sum,
    sum of squares)."""
    out = m.cli("lustre", "lctl", "get_param", "llite.*.stats").stdout
    name, *lines = out.splitlines()
    assert re.match(r"^llite\.hot-ffff[0-9a-f]{12}\.stats=$", name), out
    assert [STATS_HEADER.match(line).group(1) for line in lines[:3]] == ["snapshot_time", "start_time",
                                                                         "elapsed_time"], out
    counters = {}
    for line in lines[3:]:
        hit = STATS_LINE.match(line)
        assert hit, line
        n, lo, hi, total, squares = (int(g) for i, g in enumerate(hit.groups()) if i not in (0, 2))
        assert n > 0 and lo <= hi and n * lo <= total <= n * hi and squares >= total * total // n, line
        counters[hit.group(1)] = (n, lo, hi, total, squares)
    return counters


def test_llite_stats_count_what_the_mount_serves_and_set_param_clears_them(lustre):
    """llite.*.stats as a Lustre client prints it: the header, then a line a counter with samples, in
    Lustre's order; a write to it zeroes them."""
    m, _ = lustre
    out = m.cli("lustre", "lctl", "set_param", "llite.*.stats=clear").stdout
    assert re.match(r"^llite\.hot-ffff[0-9a-f]{12}\.stats=clear\n$", out), out
    d = m.mnt / "counted"
    d.mkdir()
    for i in range(3):
        fd = os.open(d / f"f{i}", os.O_CREAT | os.O_WRONLY, 0o644)
        os.write(fd, b"x" * 5000)
        os.fsync(fd)
        os.close(fd)
    os.truncate(d / "f0", 100)
    os.chmod(d / "f1", 0o600)
    (d / "f2").rename(d / "g2")
    os.unlink(d / "f1")
    assert sorted(os.listdir(d)) == ["f0", "g2"]
    os.statvfs(m.mnt)

    counters = llite_stats(m)
    order = [line.split()[0] for line in m.cli("lustre", "lctl", "get_param", "-n", "llite.*.stats")
             .stdout.splitlines()[3:]]
    assert order == [n for n, _ in STATS_COUNTERS if n in counters], order   # Lustre's table order
    assert counters["mkdir"][0] == 1 and counters["create"][0] == 3 and counters["rename"][0] == 1
    assert counters["unlink"][0] == 1 and counters["truncate"][0] == 1 and counters["statfs"][0] >= 1
    assert counters["fsync"][0] == 3 and counters["setattr"][0] >= 1 and counters["readdir"][0] >= 1
    assert counters["open"][0] >= 3 and counters["close"][0] >= 3
    # the three files' 5,000 bytes reached the mount at fsync, in the kernel's writes
    assert counters["write_bytes"][3] == 3 * 5000 and counters["write_bytes"][2] <= MiB
    assert "read_bytes" not in counters   # nothing was read

    m.cli("lustre", "lctl", "set_param", "-n", "llite.*.stats=0")
    assert not set(llite_stats(m)) & {"mkdir", "create", "rename", "unlink", "fsync", "write_bytes"}
    r = m.cli("lustre", "lctl", "get_param", "llite.*.stat", check=False)
    assert r.returncode == errno.ENOENT and "llite/*/stat': No such file or directory" in r.stderr


def test_mdd_atime_diff_is_the_mdts_and_the_mounts_send_reads_by_it(lustre, tmp_path):
    """`lctl get_param|set_param mdd.*.atime_diff` as on the MDS node: the MDT's, 60 s by default. A
    read of a file written just now leaves the atime the MDT keeps; after set_param ...=0 a read moves
    it, through this mount and through one mounted after the change. A bad value or name is refused
    and changes nothing."""
    m, client = lustre
    lctl = lambda *a, check=True: m.cli("lustre", "lctl", *a, check=check)  # noqa: E731
    assert lctl("get_param", "mdd.*.atime_diff").stdout == "mdd.hot-MDT0000.atime_diff=60\n"
    assert lctl("get_param", "-N", "mdd.*").stdout == "mdd.hot-MDT0000.atime_diff\n"
    for name in ("a", "b"):
        (m.mnt / f"atime-{name}").write_bytes(b"x" * 10)
    before = {n: client.getattr(f"/atime-{n}").atime_ns for n in ("a", "b")}
    time.sleep(0.01)
    assert (m.mnt / "atime-a").read_bytes() == b"x" * 10
    assert client.getattr("/atime-a").atime_ns == before["a"]   # within atime_diff: the MDT keeps it
    refused = "mdd/hot-MDT0000/atime_diff=soon: Invalid argument (0..18446744073709551615)"
    for bad, code, why in [("mdd.*.atime_diff=soon", errno.EINVAL, refused),
                           ("mdd.*.atime_diff=-1", errno.EINVAL, "Invalid argument"),
                           ("mdd.*.no_such=1", errno.ENOENT, "param_path 'mdd/*/no_such': No such file")]:
        r = lctl("set_param", bad, check=False)
        assert r.returncode == code and why in r.stderr, (bad, r.stderr)
    assert lctl("get_param", "-n", "mdd.hot-MDT0000.atime_diff").stdout == "60\n"

    try:
        assert lctl("set_param", "mdd.*.atime_diff=0").stdout == "mdd.hot-MDT0000.atime_diff=0\n"
        assert (m.mnt / "atime-a").read_bytes() == b"x" * 10
        assert client.getattr("/atime-a").atime_ns > before["a"]
        for _, _, mnt2, _ in with_second_mount(m, tmp_path / "mnt2"):   # asks the MDS at mount
            assert (mnt2 / "atime-b").read_bytes() == b"x" * 10
            assert client.getattr("/atime-b").atime_ns > before["b"]
        # lctl's values as the proc handler reads them (simple_strtoul, base 0): 010 is octal
        assert lctl("set_param", "mdd.*.atime_diff=010").stdout == "mdd.hot-MDT0000.atime_diff=8\n"
    finally:
        lctl("set_param", "mdd.*.atime_diff=60")
