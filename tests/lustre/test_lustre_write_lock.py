"""A file a mount creates is written under its write lock (services/lustre/mds/ldlm.py): what its last
writes left (less than one write RPC) and its size stay in that client after close, as a Lustre client
keeps dirty pages under its PW lock, until another client reads or changes the file (the MDS calls the
lock back and the holder writes back first), an fsync, an unmount, or the kernel's dirty expiry. These
tests look at the OST objects directly (the layout from the holder's `lustre.lov`, then OSS reads that
go through no MDS) to see where the data is, and at the other mount to see that nobody sees it stale."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from services.lustre.client.core import LustreClient
from services.lustre.client.fuse import KEPT_MAX
from services.lustre.client.mount import is_mounted
from services.lustre.wire import parse_lov_xattr
from tests.lustre.conftest import LustreMount, lustre_mount, needs_fuse, pattern, with_second_mount

pytestmark = needs_fuse


@pytest.fixture(scope="module")
def two(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LustreMount, Path, Path, LustreClient]]:
    for m in lustre_mount(tmp_path_factory.mktemp("lustre-wlock"), "rack"):
        yield from with_second_mount(m, m.mnt.parent / "mnt2")


def on_osts(client: LustreClient, holder_path: Path, n: int) -> bytes:
    """The first n bytes of the file as its OST objects hold them (the layout read on the holder's mount,
    from its own cache: no MDS call, so no callback)."""
    layout, _fid = parse_lov_xattr(os.getxattr(holder_path, "lustre.lov"))
    return client.read(layout, 0, n, n)


def write(path: Path, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)


def test_a_closed_file_stays_in_its_client_until_another_client_reads_it(two):
    m, a, b, client = two
    data = pattern(3000, 1)
    write(a / "kept.bin", data)
    assert on_osts(client, a / "kept.bin", len(data)) == bytes(len(data))   # in a's memory only
    assert (a / "kept.bin").read_bytes() == data                           # a reads its own
    assert (b / "kept.bin").read_bytes() == data                           # b's open called a's lock back
    assert on_osts(client, a / "kept.bin", len(data)) == data


def test_stat_listing_and_lfs_on_other_clients_see_the_kept_sizes(two):
    m, a, b, client = two
    (a / "many").mkdir()
    sizes = {f"f{i:02d}": 100 + 37 * i for i in range(20)}
    for name, n in sizes.items():
        write(a / "many" / name, pattern(n, n))
    assert {e.name: e.stat().st_size for e in os.scandir(b / "many")} == sizes   # a listing: every lock called back
    write(a / "many" / "late", b"z" * 4321)
    assert os.stat(b / "many" / "late").st_size == 4321
    write(a / "many" / "sdk", b"s" * 77)
    assert client.getattr("/many/sdk").size == 77   # a client with no locks at all (the SDK, lfs)
    write(a / "many" / "found", b"f" * 5000)
    out = m.cli("lustre", "lfs", "find", str(m.mnt / "many"), "--size", "+4k").stdout.split()
    assert sorted(Path(p).name for p in out) == ["found", "late"]


def test_a_listing_of_as_many_kept_files_as_a_client_keeps_sees_every_size(two):
    """KEPT_MAX files kept on a, listed on b: a answers every callback (writes each back) within the
    MDS's callback timeout, or it would be evicted and b would list sizes of 0."""
    m, a, b, client = two
    (a / "full").mkdir()
    for i in range(KEPT_MAX):
        write(a / "full" / f"k{i:04d}", b"k" * (1 + i % 300))
    assert {e.name: e.stat().st_size for e in os.scandir(b / "full")} == {
        f"k{i:04d}": 1 + i % 300 for i in range(KEPT_MAX)}


def test_a_change_by_the_other_client_follows_the_kept_writes(two):
    m, a, b, client = two
    write(a / "then-append", b"first\n")
    with open(b / "then-append", "ab") as f:   # b's append lands after a's kept bytes, not over them
        f.write(b"second\n")
    assert (a / "then-append").read_bytes() == b"first\nsecond\n"
    write(a / "then-chmod", b"data")
    os.chmod(b / "then-chmod", 0o600)
    assert (b / "then-chmod").read_bytes() == b"data"
    write(a / "then-rename", b"moved")
    os.rename(b / "then-rename", b / "renamed")
    assert (a / "renamed").read_bytes() == b"moved"


def test_fsync_sends_a_kept_file_and_an_unlinked_one_is_gone_on_both_mounts(two):
    m, a, b, client = two
    data = pattern(5000, 2)
    with open(a / "synced.bin", "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    assert on_osts(client, a / "synced.bin", len(data)) == data
    write(a / "short-lived", b"gone before anyone read it")
    os.unlink(a / "short-lived")
    assert not (b / "short-lived").exists()
    assert "short-lived" not in os.listdir(a)


def test_the_holders_own_rename_and_link_keep_the_data(two):
    m, a, b, client = two
    write(a / "r1", b"renamed by its writer")
    os.rename(a / "r1", a / "r2")
    assert (b / "r2").read_bytes() == b"renamed by its writer"
    write(a / "l1", b"linked by its writer")
    os.link(a / "l1", a / "l2")
    write(a / "l1", b"written again, seen under both names")   # l1 is no longer created here: sent at close
    assert (b / "l2").read_bytes() == b"written again, seen under both names"


def test_unmount_writes_back_what_was_kept(two, tmp_path):
    m, a, b, client = two
    mnt3 = tmp_path / "mnt3"
    m.cli("lustre", "mount", str(mnt3))
    try:
        data = pattern(2000, 3)
        write(mnt3 / "at-umount.bin", data)
        lov = os.getxattr(mnt3 / "at-umount.bin", "lustre.lov")
        layout, _fid = parse_lov_xattr(lov)
        assert client.read(layout, 0, len(data), len(data)) == bytes(len(data))
    finally:
        m.cli("lustre", "umount", str(mnt3))
    assert not is_mounted(str(mnt3))
    assert client.read(layout, 0, len(data), len(data)) == data


def test_an_oss_failover_after_close_loses_nothing(two):
    """Kept on a after close, its OST's OSS killed: when b reads, a writes back to the partner."""
    m, a, b, client = two
    (a / "ost0").mkdir()
    m.cli("lustre", "lfs", "setstripe", "-c", "1", "-i", "0", str(m.mnt / "ost0"))
    data = pattern(3500, 4)
    write(a / "ost0" / "kept.bin", data)
    m.cli("lustre", "fault", "oss-kill", "oss01")
    try:
        assert (b / "ost0" / "kept.bin").read_bytes() == data   # from oss02, after the failover
    finally:
        m.cli("lustre", "fault", "oss-start", "oss01", check=False)
    deadline = time.monotonic() + 60
    while {t.index: t.server for t in client.statfs().osts}.get(0) != "oss01":   # failback, for the tests after
        assert time.monotonic() < deadline
        time.sleep(0.2)


def test_an_mds_failover_makes_the_client_write_back(two):
    """The MDS's locks are in its memory: after a failover the holder's stream reconnects and it writes
    back everything it kept (its write locks are gone), so the standby serves the sizes."""
    m, a, b, client = two
    data = pattern(1234, 5)
    write(a / "across-mds.bin", data)
    m.cli("lustre", "fault", "mds-kill")
    deadline = time.monotonic() + 60
    while on_osts(client, a / "across-mds.bin", len(data)) != data:
        assert time.monotonic() < deadline, "the kept file was not written back after the MDS failover"
        time.sleep(0.2)
    assert client.getattr("/across-mds.bin").size == len(data)
    assert (b / "across-mds.bin").read_bytes() == data
