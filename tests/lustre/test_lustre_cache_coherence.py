"""Two mounts of one filesystem (two clients, `twin lustre mount` twice) cache attributes, dentries and
pages under the MDS's locks (services/lustre/mds/ldlm.py) and stay coherent as Lustre's do: what one
changes, the other sees at once, though its kernel and its client keep attributes for as long as they
hold their locks."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from services.lustre.client.mount import is_mounted
from tests.lustre.conftest import LustreMount, lustre_mount, needs_fuse

pytestmark = needs_fuse


@pytest.fixture(scope="module")
def two(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LustreMount, object, object]]:
    for m in lustre_mount(tmp_path_factory.mktemp("lustre-coherence"), "rack"):
        mnt2 = m.mnt.parent / "mnt2"
        m.cli("lustre", "mount", str(mnt2))
        try:
            yield m, m.mnt, mnt2
        finally:
            m.cli("lustre", "umount", str(mnt2), check=False)
            assert not is_mounted(str(mnt2))


def test_write_close_then_open_read_on_the_other_client(two):
    m, a, b = two
    (a / "shared.txt").write_bytes(b"first version\n")
    assert (b / "shared.txt").read_bytes() == b"first version\n"
    (a / "shared.txt").write_bytes(b"second version, same size?\n")   # the other client cached the first
    assert (b / "shared.txt").read_bytes() == b"second version, same size?\n"
    with open(a / "shared.txt", "r+b") as f:   # an overwrite that keeps the size
        f.write(b"SECOND")
    assert (b / "shared.txt").read_bytes() == b"SECOND version, same size?\n"


def test_stat_after_the_other_clients_write_sees_the_new_size(two):
    m, a, b = two
    (a / "grow.log").write_bytes(b"x" * 10)
    assert os.stat(b / "grow.log").st_size == 10   # cached by b's kernel and client now
    for n in (1000, 5000, 123_456):
        with open(a / "grow.log", "ab") as f:
            f.write(b"y" * (n - os.stat(a / "grow.log").st_size))
        assert os.stat(b / "grow.log").st_size == n
        assert os.stat(b / "grow.log").st_mtime_ns == os.stat(a / "grow.log").st_mtime_ns


def test_an_open_file_sees_what_the_other_client_appended(two):
    m, a, b = two
    (a / "tail.log").write_bytes(b"one\n")
    with open(b / "tail.log", "rb") as reader:
        assert reader.read() == b"one\n"
        with open(a / "tail.log", "ab") as f:
            f.write(b"two\n")
        assert reader.read() == b"two\n"   # like `tail -f` on another node


def test_namespace_changes_are_seen_at_once(two):
    m, a, b = two
    (a / "ns").mkdir()
    (a / "ns" / "keep").write_bytes(b"k")
    assert sorted(os.listdir(b / "ns")) == ["keep"]
    assert os.stat(b / "ns" / "keep").st_size == 1
    (a / "ns" / "new").write_bytes(b"n")
    os.unlink(a / "ns" / "keep")
    assert sorted(os.listdir(b / "ns")) == ["new"]
    with pytest.raises(FileNotFoundError):
        os.stat(b / "ns" / "keep")
    os.rename(a / "ns", a / "moved")
    with pytest.raises(OSError) as e:
        os.stat(b / "ns" / "new")
    assert e.value.errno == errno.ENOENT
    assert (b / "moved" / "new").read_bytes() == b"n"
    os.chmod(a / "moved" / "new", 0o600)
    assert os.stat(b / "moved" / "new").st_mode & 0o777 == 0o600


def test_o_append_writers_on_two_clients_lose_nothing(two):
    """Two clients append records to one file at once, unbuffered: every record is there, whole."""
    import threading

    m, a, b = two
    (a / "shared.log").write_bytes(b"")
    n = 150

    def append(mnt, tag: str) -> None:
        fd = os.open(mnt / "shared.log", os.O_WRONLY | os.O_APPEND)
        try:
            for i in range(n):
                os.write(fd, f"{tag} {i:04d} {'.' * (i % 50)}\n".encode())
        finally:
            os.close(fd)

    writers = [threading.Thread(target=append, args=(mnt, tag)) for mnt, tag in ((a, "A"), (b, "B"))]
    for w in writers:
        w.start()
    for w in writers:
        w.join()
    want = {f"{tag} {i:04d} {'.' * (i % 50)}" for tag in "AB" for i in range(n)}
    for mnt in (a, b):
        lines = (mnt / "shared.log").read_bytes().decode().splitlines()
        assert len(lines) == 2 * n and set(lines) == want
        assert os.stat(mnt / "shared.log").st_size == sum(len(x) + 1 for x in want)


def test_a_name_another_client_created_is_found_where_this_one_knew_none(two):
    """A mount that listed a directory (or made it) answers a missing name itself, under the directory's
    lock: another client's create there revokes it, so the new name is found at once."""
    m, a, b = two
    os.mkdir(b / "neg")   # b made it: b knows it is empty
    with pytest.raises(FileNotFoundError):
        os.stat(b / "neg" / "late")
    (a / "neg" / "late").write_bytes(b"here")
    assert (b / "neg" / "late").read_bytes() == b"here"
    assert os.listdir(b / "neg") == ["late"]   # b listed it whole now
    with pytest.raises(FileNotFoundError):
        os.stat(b / "neg" / "later")
    os.mkdir(a / "neg" / "later")
    assert os.path.isdir(b / "neg" / "later")
    os.unlink(b / "neg" / "late")
    with pytest.raises(FileNotFoundError):
        os.stat(a / "neg" / "late")



def test_a_listing_kept_under_its_lock_needs_no_mds_until_another_client_changes_it(two):
    """A directory's entries and their attributes stay where they were read while the reader holds the
    directory's lock, as llite keeps directory pages: in the kernel (FOPEN_CACHE_DIR) and in the client,
    which keeps them in step with its own creates. With both MDSs stopped, this mount still lists the
    directory, after its own create in it too; once another client creates a name there, the listing
    shows it."""
    m, a, b = two
    d = a / "kept"
    d.mkdir()
    (d / "one").write_bytes(b"1")
    assert os.listdir(d) == ["one"]
    # atime after mtime (an hour ahead): under relatime a listing then changes nothing on the MDS
    os.utime(d, ns=(time.time_ns() + 3600 * 10**9, os.stat(d).st_mtime_ns))
    (d / "two").write_bytes(b"22")   # this mount's own create: the kernel's copy of the listing is reset

    def listed() -> str:
        code = (f"import os; p = {str(d)!r}; "
                "print(sorted((n, os.stat(os.path.join(p, n)).st_size) for n in os.listdir(p)))")
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30,
                              check=True).stdout.strip()

    daemons = json.loads((m.run / "daemons.json").read_text())["daemons"]
    mds = [daemons[name]["pid"] for name in ("mds01", "mds02")]
    for pid in mds:
        os.kill(pid, signal.SIGSTOP)
    try:
        first, second = listed(), listed()   # from the client's copy, then from the kernel's
    finally:
        for pid in mds:
            os.kill(pid, signal.SIGCONT)
    assert first == second == "[('one', 1), ('two', 2)]"
    (b / "kept" / "three").write_bytes(b"333")
    assert listed() == "[('one', 1), ('three', 3), ('two', 2)]"


def test_pages_kept_across_opens_need_no_oss_until_another_client_writes(two):
    """A file's pages stay in this mount's page cache from one open to the next while it holds the
    file's lock, as llite keeps pages under its extent locks (FOPEN_KEEP_CACHE): with both OSSs stopped,
    a file read once reads again. Another client's write calls the lock back and the next open here
    reads the new bytes, though the size did not change."""
    m, a, b = two
    (b / "pages.dat").write_bytes(b"old!" * 5000)   # the other client's file: mount a keeps nothing of it
    assert (a / "pages.dat").read_bytes() == b"old!" * 5000   # but its kernel's pages

    def read_again() -> str:
        code = f"import hashlib; print(hashlib.sha1(open({str(a / 'pages.dat')!r}, 'rb').read()).hexdigest())"
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30,
                              check=True).stdout.strip()

    daemons = json.loads((m.run / "daemons.json").read_text())["daemons"]
    oss = [daemons[name]["pid"] for name in daemons if name.startswith("oss")]
    assert oss
    for pid in oss:
        os.kill(pid, signal.SIGSTOP)
    try:
        kept = read_again()
    finally:
        for pid in oss:
            os.kill(pid, signal.SIGCONT)
    assert kept == hashlib.sha1(b"old!" * 5000).hexdigest()
    with open(b / "pages.dat", "r+b") as f:   # the same size: only the callback tells mount a
        f.seek(4096)
        f.write(b"NEW!")
    want = bytearray(b"old!" * 5000)
    want[4096:4100] = b"NEW!"
    assert (a / "pages.dat").read_bytes() == bytes(want)


def test_an_o_append_write_here_is_read_by_another_handle_that_kept_the_pages(two):
    """An O_APPEND write goes around the page cache (straight to the OSTs, the MDS moving the end); the
    kernel drops the pages it wrote over (the last one held the old end), so the next open, which keeps
    the pages, reads the appended bytes."""
    m, a, b = two
    (a / "kept-tail.log").write_bytes(b"one\n")
    assert (a / "kept-tail.log").read_bytes() == b"one\n"   # the page with the old end is cached
    with open(a / "kept-tail.log", "ab") as f:
        f.write(b"two\n")
    assert (a / "kept-tail.log").read_bytes() == b"one\ntwo\n"
    assert (b / "kept-tail.log").read_bytes() == b"one\ntwo\n"


# The kernel's page cache keeps writes (FUSE_WRITEBACK_CACHE), and with it a file's size and times as its
# own (client/session.py: retire, grow). These are the changes it would otherwise hide.

def test_a_shrink_by_the_other_client_is_seen_here(two):
    m, a, b = two
    (a / "shrink.dat").write_bytes(b"z" * 10_000)
    assert os.stat(b / "shrink.dat").st_size == 10_000
    assert (b / "shrink.dat").read_bytes() == b"z" * 10_000   # b's kernel holds the pages too
    os.truncate(a / "shrink.dat", 10)
    assert os.stat(b / "shrink.dat").st_size == 10
    assert (b / "shrink.dat").read_bytes() == b"z" * 10
    (a / "shrink.dat").write_bytes(b"short")   # O_TRUNC and a write, as `echo short > f`
    assert (b / "shrink.dat").read_bytes() == b"short"


def test_small_writes_on_both_clients_to_their_own_ranges_of_one_file(two):
    """Each client writes its half in 128-byte writes through its page cache; after both close, both see
    the whole file: neither client's pages hide the other's. The halves meet at a page boundary: two
    clients writing into one page at once is where the twin departs from Lustre (docs/FIDELITY.md)."""
    m, a, b = two
    half = 12 * 4096
    (a / "halves.dat").write_bytes(b"")
    fa = os.open(a / "halves.dat", os.O_WRONLY)
    fb = os.open(b / "halves.dat", os.O_WRONLY)
    try:
        for i in range(0, half, 128):
            os.pwrite(fa, b"A" * 128, i)
            os.pwrite(fb, b"B" * 128, half + i)
    finally:
        os.close(fa)
        os.close(fb)
    want = b"A" * half + b"B" * half
    assert (a / "halves.dat").read_bytes() == want
    assert (b / "halves.dat").read_bytes() == want
    assert os.stat(a / "halves.dat").st_size == os.stat(b / "halves.dat").st_size == 2 * half
