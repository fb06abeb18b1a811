"""POSIX node types on a real mount (issue 19): hard links, symlinks, FIFOs, Unix sockets and device nodes
made with the kernel's calls in one mount (`twin lustre mount`), seen by a second mount, the OST objects
of a hard-linked file destroyed only with its last name, and everything back the same after the active
MDS is killed (the standby serves the same MDT store)."""

from __future__ import annotations

import errno
import json
import os
import signal
import socket
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from clustertwin.v1 import lustre_pb2 as pb
from services.lustre.client.core import ClientError, LustreClient
from services.lustre.manifest import LustreSection
from services.lustre.oss.objects import object_path
from services.lustre.wire import layout_from_pb
from tests.lustre.conftest import LustreMount, lustre_mount, needs_fuse, with_second_mount

pytestmark = needs_fuse


@pytest.fixture(scope="module")
def two(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LustreMount, Path, Path, LustreClient]]:
    for m in lustre_mount(tmp_path_factory.mktemp("lustre-posix"), "rack"):
        yield from with_second_mount(m, m.mnt.parent / "mnt2")


def object_files(m: LustreMount, client: LustreClient, path: str) -> list[Path]:
    dirs = {o.index: Path(o.dir) for o in LustreSection.require(m.manifest, m.run).osts}
    layout = layout_from_pb(client.getattr(path).layout)
    return [object_path(dirs[o.ost], o.seq, o.objid) for o in layout.objects]


def wait_gone(paths: list[Path]) -> None:
    """The MDS destroys objects after answering the unlink (its destroy queue, in order): wait for it."""
    deadline = time.monotonic() + 60
    while any(p.exists() for p in paths):
        assert time.monotonic() < deadline, f"objects never destroyed: {paths}"
        time.sleep(0.05)


def test_hard_links(two):
    m, a, b, client = two
    (a / "hl").mkdir()
    (a / "hl" / "orig").write_bytes(b"linked data\n")
    os.link(a / "hl" / "orig", a / "hl" / "second")
    s1, s2 = os.stat(a / "hl" / "orig"), os.stat(a / "hl" / "second")
    assert s1.st_ino == s2.st_ino and s1.st_nlink == s2.st_nlink == 2
    assert (b / "hl" / "second").read_bytes() == b"linked data\n"            # the other mount sees the name
    assert os.stat(b / "hl" / "second").st_nlink == 2
    with open(a / "hl" / "second", "ab") as f:                                # one file under both names
        f.write(b"more\n")
    assert (b / "hl" / "orig").read_bytes() == b"linked data\nmore\n"
    for bad, want in (((a / "hl", a / "hl" / "dirlink"), errno.EPERM),         # no links to directories
                      ((a / "hl" / "orig", a / "hl" / "second"), errno.EEXIST),
                      ((a / "hl" / "missing", a / "hl" / "x"), errno.ENOENT)):
        with pytest.raises(OSError) as e:
            os.link(*bad)
        assert e.value.errno == want
    objects = object_files(m, client, "/hl/orig")
    assert all(p.exists() for p in objects)
    assert os.stat(b / "hl" / "second").st_nlink == 2                         # cached by the other mount now
    os.unlink(a / "hl" / "orig")
    assert os.stat(a / "hl" / "second").st_nlink == 1                         # own mount: not the cached 2
    assert client.getattr("/hl/second").nlink == 1
    assert os.stat(b / "hl" / "second").st_nlink == 1                         # the other mount's cached 2 revoked
    (a / "sentinel").write_bytes(b"s")                                        # destroyed after any wrong destroy
    sentinel = object_files(m, client, "/sentinel")
    os.unlink(a / "sentinel")
    wait_gone(sentinel)
    assert all(p.exists() for p in objects)                                   # a name remains: objects kept
    assert (b / "hl" / "second").read_bytes() == b"linked data\nmore\n"
    os.link(a / "hl" / "second", a / "keep")                                  # kept for the failover test
    os.unlink(b / "hl" / "second")
    assert sorted(os.listdir(a / "hl")) == []
    assert all(p.exists() for p in objects)
    os.link(a / "keep", a / "hl" / "tmp")
    os.unlink(a / "hl" / "tmp")
    os.link(a / "keep", a / "keep2")


def test_hard_link_objects_go_with_the_last_name(two):
    m, a, b, client = two
    (a / "last").write_bytes(b"x" * 100_000)
    os.link(a / "last", a / "last2")
    objects = object_files(m, client, "/last")
    os.unlink(a / "last")
    os.unlink(b / "last2")
    wait_gone(objects)
    with pytest.raises(FileNotFoundError):
        os.stat(a / "last2")


def test_symlinks(two):
    m, a, b, client = two
    (a / "sl").mkdir()
    (a / "sl" / "ckpt-100").mkdir()
    (a / "sl" / "ckpt-100" / "model.pt").write_bytes(b"weights")
    os.symlink("ckpt-100", a / "sl" / "latest")                               # relative, to a directory
    assert os.readlink(a / "sl" / "latest") == "ckpt-100"
    assert (a / "sl" / "latest" / "model.pt").read_bytes() == b"weights"
    assert stat.S_ISLNK(os.lstat(a / "sl" / "latest").st_mode)
    assert stat.S_ISDIR(os.stat(a / "sl" / "latest").st_mode)                # stat follows, lstat does not
    assert os.lstat(a / "sl" / "latest").st_size == len("ckpt-100")
    os.symlink(str(a / "sl" / "ckpt-100" / "model.pt"), a / "sl" / "abs")     # absolute
    assert (a / "sl" / "abs").read_bytes() == b"weights"
    os.symlink("nowhere/at/all", a / "sl" / "dangling")                       # dangling is allowed
    assert os.path.lexists(a / "sl" / "dangling") and not os.path.exists(a / "sl" / "dangling")
    with pytest.raises(FileNotFoundError):
        open(a / "sl" / "dangling")
    os.symlink("loop2", a / "sl" / "loop1")
    os.symlink("loop1", a / "sl" / "loop2")
    with pytest.raises(OSError) as e:
        open(a / "sl" / "loop1")
    assert e.value.errno == errno.ELOOP                                       # the kernel's path walk
    with pytest.raises(FileExistsError):
        os.symlink("x", a / "sl" / "latest")
    # the other mount: the same links, followed the same way
    assert os.readlink(b / "sl" / "latest") == "ckpt-100"
    assert (b / "sl" / "latest" / "model.pt").read_bytes() == b"weights"
    assert sorted(os.listdir(b / "sl")) == ["abs", "ckpt-100", "dangling", "latest", "loop1", "loop2"]
    # a checkpointer's `ln -sfn`: a new link renamed over the old one
    (a / "sl" / "ckpt-200").mkdir()
    os.symlink("ckpt-200", a / "sl" / "latest.tmp")
    os.rename(a / "sl" / "latest.tmp", a / "sl" / "latest")
    assert os.readlink(b / "sl" / "latest") == "ckpt-200"
    os.unlink(a / "sl" / "abs")                                               # unlink removes the link only
    assert (a / "sl" / "ckpt-100" / "model.pt").exists()
    with pytest.raises(OSError) as e:
        os.readlink(a / "sl" / "ckpt-100")
    assert e.value.errno == errno.EINVAL


def test_fifo_socket_and_device_nodes(two):
    m, a, b, client = two
    (a / "sp").mkdir()
    os.mkfifo(a / "sp" / "fifo", 0o640)
    got: list[bytes] = []
    assert stat.S_ISFIFO(os.stat(b / "sp" / "fifo").st_mode)
    with pytest.raises(FileExistsError):
        os.mkfifo(a / "sp" / "fifo")
    # a FIFO's data never leaves the kernel: writer and reader on this host, through the one mount
    reader = threading.Thread(target=lambda: got.append(open(a / "sp" / "fifo", "rb").read()))
    reader.start()
    with open(a / "sp" / "fifo", "wb") as w:
        w.write(b"through the pipe")
    reader.join(timeout=60)
    assert got == [b"through the pipe"]
    # a Unix socket bound in the mount (mknod S_IFSOCK), a client connecting by its path
    path = str(a / "sp" / "sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(1)
    try:
        assert stat.S_ISSOCK(os.stat(b / "sp" / "sock").st_mode)
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as c:
            c.connect(path)
            conn, _ = server.accept()
            c.sendall(b"hello")
            assert conn.recv(5) == b"hello"
            conn.close()
    finally:
        server.close()
    with pytest.raises(OSError) as e:   # bind on a name that exists
        with socket.socket(socket.AF_UNIX) as s2:
            s2.bind(path)
    assert e.value.errno == errno.EADDRINUSE
    umask = os.umask(0)
    os.umask(umask)
    os.mknod(a / "sp" / "null", stat.S_IFCHR | 0o666, os.makedev(1, 3))
    os.mknod(a / "sp" / "sda1", stat.S_IFBLK | 0o660, os.makedev(8, 1))
    for mnt in (a, b):
        st_c, st_b = os.stat(mnt / "sp" / "null"), os.stat(mnt / "sp" / "sda1")
        assert stat.S_ISCHR(st_c.st_mode) and (os.major(st_c.st_rdev), os.minor(st_c.st_rdev)) == (1, 3)
        assert stat.S_ISBLK(st_b.st_mode) and (os.major(st_b.st_rdev), os.minor(st_b.st_rdev)) == (8, 1)
        assert stat.S_IMODE(st_b.st_mode) == 0o660 & ~umask
    with pytest.raises(ClientError) as e:   # a device node by an unprivileged user: the MDS refuses it
        client.mdcall("Mknod", pb.LustreMdsMknodRequest(path="/sp/dev", mode=stat.S_IFCHR | 0o666, rdev=0x103,
                                                        cred=pb.LustreCred(uid=1000, gid=1000)))
    assert e.value.errno == errno.EPERM
    os.unlink(a / "sp" / "null")
    assert sorted(os.listdir(b / "sp")) == ["fifo", "sda1", "sock"]


def test_errors_as_the_kernel_gives_them(two):
    m, a, b, client = two
    e_ = a / "errs"
    (e_ / "full" / "sub").mkdir(parents=True)
    (e_ / "empty").mkdir()
    (e_ / "file").write_bytes(b"f")
    cases = [
        (lambda: open(e_ / ("n" * 256), "w"), errno.ENAMETOOLONG),               # a name over 255 bytes
        (lambda: os.mkdir(e_ / ("n" * 256)), errno.ENAMETOOLONG),
        (lambda: os.symlink("t" * 4096, e_ / "sl"), errno.ENAMETOOLONG),         # a target over PATH_MAX - 1
        (lambda: os.stat(str(e_) + "/x" * 2100), errno.ENAMETOOLONG),            # a path over 4096 bytes
        (lambda: open(e_ / "file" / "x"), errno.ENOTDIR),
        (lambda: os.mkdir(e_ / "file"), errno.EEXIST),
        (lambda: os.rmdir(e_ / "full"), errno.ENOTEMPTY),
        (lambda: os.rmdir(e_ / "file"), errno.ENOTDIR),
        (lambda: os.unlink(e_ / "full"), errno.EISDIR),
        (lambda: os.rename(e_ / "full", e_ / "full" / "sub" / "in"), errno.EINVAL),   # into its own subtree
        (lambda: os.rename(e_ / "empty", e_ / "full"), errno.ENOTEMPTY),
        (lambda: os.rename(e_ / "file", e_ / "empty"), errno.EISDIR),
        (lambda: os.rename(e_ / "empty", e_ / "file"), errno.ENOTDIR),
        (lambda: os.rename(e_ / "file", b / "errs" / "moved"), errno.EXDEV),     # across mounts
    ]
    for call, want in cases:
        with pytest.raises(OSError) as e:
            call()
        assert e.value.errno == want, (e.value, want)
    assert sorted(os.listdir(b / "errs")) == ["empty", "file", "full"]          # nothing changed
    os.rename(e_ / "empty", e_ / "full" / "sub")                                  # over an empty directory
    assert sorted(os.listdir(b / "errs" / "full")) == ["sub"]
    assert sorted(os.listdir(b / "errs")) == ["file", "full"]


def test_a_file_unlinked_while_open_lives_until_its_last_close(two):
    # tmpfile's pattern: the name goes at once (both mounts, and the directory can be removed), the open
    # file stays readable and writable, and its objects go with the last close
    m, a, b, client = two
    (a / "orph").mkdir()
    with open(a / "orph" / "t", "w+b") as f:
        f.write(b"kept while open")
        f.flush()
        objects = object_files(m, client, "/orph/t")
        os.unlink(a / "orph" / "t")
        assert os.listdir(a / "orph") == [] and os.listdir(b / "orph") == []
        assert os.fstat(f.fileno()).st_nlink == 0
        os.rmdir(b / "orph")
        f.seek(0)
        assert f.read() == b"kept while open"
        os.ftruncate(f.fileno(), 4)
        assert os.fstat(f.fileno()).st_size == 4 and os.pread(f.fileno(), 100, 0) == b"kept"
        assert all(p.exists() for p in objects)
    wait_gone(objects)
    assert not (a / "orph").exists() and not (b / "orph").exists()


def test_node_types_and_link_counts_survive_mds_failover(two):
    m, a, b, client = two
    (a / "fo").mkdir()
    (a / "fo" / "f").write_bytes(b"data")
    os.link(a / "fo" / "f", a / "fo" / "g")
    os.symlink("f", a / "fo" / "s")
    os.mkfifo(a / "fo" / "p")
    os.mknod(a / "fo" / "c", stat.S_IFCHR | 0o600, os.makedev(4, 5))
    paths = ["/fo/f", "/fo/g", "/fo/s", "/fo/p", "/fo/c", "/keep", "/keep2", "/sl/latest", "/sp/sda1"]
    before = {p: client.getattr(p) for p in paths}
    active = client.mdcall("Status", pb.LustreMdsStatusRequest()).name
    os.kill(json.loads((m.run / "daemons.json").read_text())["daemons"][active]["pid"], signal.SIGKILL)
    after = {p: client.getattr(p) for p in paths}   # blocks until the standby serves
    assert client.mdcall("Status", pb.LustreMdsStatusRequest()).name != active
    for p in paths:
        x, y = before[p], after[p]
        assert (y.fid, y.ino, y.mode, y.nlink, y.rdev, y.size, y.uid, y.gid) == \
               (x.fid, x.ino, x.mode, x.nlink, x.rdev, x.size, x.uid, x.gid), p
    assert after["/fo/f"].nlink == 2 and after["/keep"].nlink == 2
    assert client.mdcall("Readlink", pb.LustreMdsReadlinkRequest(path="/fo/s")).target == "f"
    for mnt in (a, b):   # both mounts, through the kernel, after failover
        assert os.readlink(mnt / "fo" / "s") == "f"
        assert (mnt / "fo" / "s").read_bytes() == b"data"
        assert os.stat(mnt / "fo" / "g").st_nlink == 2
        assert stat.S_ISFIFO(os.stat(mnt / "fo" / "p").st_mode)
        assert os.stat(mnt / "fo" / "c").st_rdev == os.makedev(4, 5)
        assert (mnt / "keep2").read_bytes() == b"linked data\nmore\n"
    os.unlink(a / "fo" / "g")
    assert os.stat(a / "fo" / "f").st_nlink == 1
