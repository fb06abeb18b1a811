"""MDS namespace: FIDs, create/mkdir/unlink/rename/readdir/stat, permissions, inherited layouts."""

from __future__ import annotations

import stat

import pytest

from services.lustre.errors import LustreError
from services.lustre.fid import Fid
from services.lustre.layout import MiB, StripeSpec
from services.lustre.namespace import FIRST_OBJID, Cred, ost_seq
from tests.unit.lustre.helpers import make_ns

ALICE = Cred(1000, 1000)
BOB = Cred(1001, 1001)


def _err(name: str, fn, *args, **kw) -> LustreError:  # type: ignore[no-untyped-def]
    with pytest.raises(LustreError) as e:
        fn(*args, **kw)
    assert e.value.name == name, e.value
    assert e.value.errno > 0 and e.value.message
    return e.value


def test_fids_objids_and_stat() -> None:
    ns = make_ns(4)
    d = ns.mkdir("/d", 1.0)
    f = ns.create("/d/f", 2.0, spec=StripeSpec(2, MiB))
    assert str(d.fid) == "[0x200000400:0x1:0x0]" and str(f.fid) == "[0x200000400:0x2:0x0]"
    assert Fid.parse("[0x200000400:0x2:0x0]") == f.fid and ns.fid2path(f.fid) == "/d/f"
    assert str(ns.root.fid) == "[0x200000007:0x1:0x0]"
    assert [(o.objid, o.seq) for o in f.layout.objects] == [  # type: ignore[union-attr]
        (FIRST_OBJID, ost_seq(o.ost)) for o in f.layout.objects]  # type: ignore[union-attr]
    s = ns.stat("/d/f")
    assert stat.S_ISREG(s.mode) and s.mode & 0o777 == 0o644 and s.size == 0 and s.ctime == 2.0
    assert stat.S_ISDIR(ns.stat("/d").mode) and ns.stat("/d").nlink == 2 and ns.stat("/").nlink == 3
    g = ns.create("/g", 3.0, spec=StripeSpec(1, 0, f.layout.objects[0].ost))  # type: ignore[union-attr]
    assert g.layout.objects[0].objid == FIRST_OBJID + 1  # type: ignore[union-attr]


def test_posix_errors() -> None:
    ns = make_ns(2)
    ns.mkdir("/d", 1.0)
    ns.create("/d/f", 1.0)
    ns.mkdir("/e", 1.0)
    ns.create("/e/x", 1.0)
    _err("ENOENT", ns.lookup, "/nope")
    _err("ENOENT", ns.create, "/nope/f", 1.0)
    _err("EEXIST", ns.create, "/d/f", 1.0)
    _err("EEXIST", ns.mkdir, "/d", 1.0)
    _err("ENOTDIR", ns.create, "/d/f/x", 1.0)
    _err("ENOTDIR", ns.readdir, "/d/f")
    _err("ENOTDIR", ns.rmdir, "/d/f", 1.0)
    _err("EISDIR", ns.unlink, "/d", 1.0)
    _err("ENOTEMPTY", ns.rmdir, "/d", 1.0)
    _err("ENOTEMPTY", ns.rename, "/d", "/e", 1.0)
    _err("EISDIR", ns.rename, "/d/f", "/e", 1.0)
    _err("ENOTDIR", ns.rename, "/e", "/d/f", 1.0)
    _err("EINVAL", ns.rename, "/d", "/d/sub", 1.0)
    assert ns.rename("/d", "/d", 1.0) == [] and ns.rename("/d/f", "/d/f", 1.0) == []  # same entry: a no-op
    _err("EINVAL", ns.lookup, "relative")
    _err("EBUSY", ns.rmdir, "/", 1.0)
    assert ns.readdir("/") == ["d", "e"] and ns.readdir("/d") == ["f"]


def test_unlink_rename_and_object_accounting() -> None:
    ns = make_ns(4)
    ns.mkdir("/d", 1.0)
    f = ns.create("/d/f", 1.0, spec=StripeSpec(4, MiB))
    ns.set_size("/d/f", 6 * MiB, 2.0)
    assert f.layout.osts == (0, 2, 1, 3)  # type: ignore[union-attr]  # round-robin alternates oss1, oss2
    assert [ns.osts[i].used_bytes for i in (0, 2, 1, 3)] == [2 * MiB, 2 * MiB, MiB, MiB]
    assert ns.rename("/d/f", "/g", 3.0) == []
    assert ns.readdir("/d") == [] and ns.lookup("/g") is f
    ns.create("/h", 4.0)
    freed = ns.rename("/h", "/g", 5.0)  # replaces /g: its objects are freed
    assert freed == list(f.layout.objects)  # type: ignore[union-attr]
    assert all(o.used_bytes == 0 for o in ns.osts.values())
    objs = ns.unlink("/g", 6.0)
    assert len(objs) == 1 and sum(o.inodes_used for o in ns.osts.values()) == 0
    ns.rmdir("/d", 7.0)
    assert ns.readdir("/") == [] and ns.mdt.inodes_used == 1


def test_permissions() -> None:
    ns = make_ns(2)
    ns.mkdir("/home", 1.0, mode=0o755)
    ns.mkdir("/home/alice", 1.0, mode=0o700)
    ns.chown("/home/alice", 1000, 1000, 1.0)
    ns.create("/home/alice/f", 1.0, cred=ALICE)
    assert ns.stat("/home/alice/f").uid == 1000
    _err("EACCES", ns.lookup, "/home/alice/f", BOB)
    _err("EACCES", ns.readdir, "/home/alice", BOB)
    _err("EACCES", ns.create, "/home/x", 1.0, cred=ALICE)
    _err("EPERM", ns.chown, "/home/alice/f", 1001, 1001, 1.0, cred=ALICE)
    ns.chmod("/home/alice", 0o755, 2.0, cred=ALICE)
    assert ns.lookup("/home/alice/f", BOB)
    _err("EACCES", ns.unlink, "/home/alice/f", 3.0, cred=BOB)
    ns.mkdir("/tmp", 1.0, mode=0o1777)
    ns.create("/tmp/a", 1.0, cred=ALICE)
    _err("EPERM", ns.unlink, "/tmp/a", 3.0, cred=BOB)  # sticky: EPERM, as Linux
    ns.unlink("/tmp/a", 3.0, cred=ALICE)


def test_directory_defaults_are_inherited_at_creation() -> None:
    ns = make_ns(8)
    ns.mkdir("/ckpt", 1.0, spec=StripeSpec(4, MiB))
    ns.mkdir("/ckpt/run1", 1.0)  # subdirectory inherits the default
    f = ns.create("/ckpt/run1/a", 2.0)
    assert f.layout.stripe_count == 4 and f.layout.stripe_size == MiB  # type: ignore[union-attr]
    g = ns.create("/ckpt/b", 2.0, spec=StripeSpec(2))  # unset size comes from the directory
    assert g.layout.stripe_count == 2 and g.layout.stripe_size == MiB  # type: ignore[union-attr]
    ns.setstripe("/ckpt", StripeSpec(-1, 2 * MiB), 3.0)  # changing the default affects only new files
    assert f.layout.stripe_count == 4 and ns.create("/ckpt/c", 4.0).layout.stripe_count == 8  # type: ignore[union-attr]
    assert ns.lookup("/ckpt/run1").default_spec == StripeSpec(4, MiB)
    assert ns.create("/plain", 4.0).layout.stripe_size == 4 * MiB  # type: ignore[union-attr]


def test_setstripe_on_files_and_layout_generation() -> None:
    ns = make_ns(4)
    f = ns.setstripe("/new", StripeSpec(2, MiB), 1.0)  # creates the file
    assert f.layout.stripe_count == 2 and f.layout.gen == 0  # type: ignore[union-attr]
    e = _err("EEXIST", ns.setstripe, "/new", StripeSpec(1), 2.0)
    assert "already has a layout" in e.message
    d = ns.create("/delayed", 1.0, delay_layout=True)
    assert d.layout is None
    ns.setstripe("/delayed", StripeSpec(3), 2.0)
    assert d.layout.stripe_count == 3  # type: ignore[union-attr]
    ns.set_size("/new", 3 * MiB, 3.0)
    old = ns.migrate("/new", StripeSpec(4, MiB), 4.0)
    assert len(old) == 2 and f.layout.gen == 1 and f.layout.stripe_count == 4  # type: ignore[union-attr]
    assert sum(o.used_bytes for o in ns.osts.values()) == 3 * MiB


def test_mdt_inode_exhaustion_is_enospc() -> None:
    ns = make_ns(2)
    ns.mdt.inodes_total = 3
    ns.create("/a", 1.0)
    ns.mkdir("/b", 1.0)
    _err("ENOSPC", ns.create, "/c", 1.0)
    _err("ENOSPC", ns.mkdir, "/c", 1.0)
    assert ns.readdir("/") == ["a", "b"]
