"""Hard links, symlinks and special files in the MDS's durable namespace (services/lustre/mds/namespace.py):
link counts, objects freed with the last name only, and every node type and name coming back when the
store is opened again (what the standby MDS does at failover), on a real SQLite file."""

from __future__ import annotations

import json
import sqlite3
import stat

import pytest

from services.lustre import find as lfind
from services.lustre.errors import LustreError
from services.lustre.layout import StripeSpec
from services.lustre.mds.namespace import RESERVE, DurableNamespace, reserve
from services.lustre.namespace import Cred
from services.lustre.ost import MdtState
from tests.unit.lustre.helpers import make_osts

USER = Cred(1000, 1000)


def open_ns(tmp_path) -> DurableNamespace:
    return DurableNamespace(f"sqlite:///{tmp_path / 'mdt.db'}", "testfs", make_osts(), MdtState(), now=1.0)


def err(fn, *args, **kw) -> str:
    with pytest.raises(LustreError) as e:
        fn(*args, **kw)
    return e.value.name


def test_hard_links_count_and_free_objects_with_the_last_name(tmp_path):
    ns = open_ns(tmp_path)
    c = Cred()
    f = ns.create("/a", 2.0, 0o644, c, None)
    objects = list(f.layout.objects)
    ns.mkdir("/d", 2.0, 0o755, c, None)
    assert ns.link("/a", "/d/b", 3.0, c).nlink == 2
    assert ns.link("/d/b", "/c", 3.0, c).nlink == 3
    assert ns.lookup("/a", c) is ns.lookup("/d/b", c)
    assert err(ns.link, "/a", "/c", 4.0, c) == "EEXIST"
    assert err(ns.link, "/d", "/e", 4.0, c) == "EPERM"          # no hard links to directories
    assert err(ns.link, "/missing", "/e", 4.0, c) == "ENOENT"
    assert err(ns.link, "/a", "/nodir/e", 4.0, c) == "ENOENT"
    assert ns.unlink("/a", 5.0, c) == []                        # other names remain: objects kept
    assert ns.lookup("/c", c).nlink == 2 and ns.lookup("/c", c).ctime == 5.0
    assert ns.rename("/c", "/d/b", 6.0, c) == []                # two names of one file: nothing happens
    assert sorted(n for n, _ in ns.readdir("/", c)) == ["c", "d"]
    ns.create("/x", 7.0, 0o644, c, None)
    assert ns.rename("/x", "/c", 7.0, c) == []                  # replaces one name of the linked file
    assert ns.lookup("/d/b", c).nlink == 1
    assert ns.unlink("/d/b", 8.0, c) == objects                 # the last name: its objects freed
    ns.close()


def test_symlinks_and_special_files(tmp_path):
    ns = open_ns(tmp_path)
    c = Cred()
    s = ns.symlink("/latest", "ckpt/step-100", 2.0, c)          # relative and dangling
    assert stat.S_ISLNK(s.st_mode) and s.size == len("ckpt/step-100") and s.layout is None
    assert ns.readlink("/latest", c) == "ckpt/step-100"
    ns.symlink("/abs", "/etc/hostname", 2.0, c)
    assert ns.readlink("/abs", c) == "/etc/hostname"
    assert err(ns.symlink, "/latest", "x", 3.0, c) == "EEXIST"
    assert err(ns.symlink, "/empty", "", 3.0, c) == "ENOENT"
    assert err(ns.symlink, "/long", "x" * 4096, 3.0, c) == "ENAMETOOLONG"
    ns.create("/plain", 2.0, 0o644, c, None)
    assert err(ns.readlink, "/plain", c) == "EINVAL"
    fifo = ns.mknod("/fifo", stat.S_IFIFO | 0o640, 0, 2.0, c)
    sock = ns.mknod("/sock", stat.S_IFSOCK | 0o755, 0, 2.0, c)
    chr_ = ns.mknod("/null", stat.S_IFCHR | 0o666, 0x103, 2.0, c)
    blk = ns.mknod("/sda", stat.S_IFBLK | 0o660, 0x800, 2.0, c)
    assert [stat.S_IFMT(n.st_mode) for n in (fifo, sock, chr_, blk)] == [stat.S_IFIFO, stat.S_IFSOCK,
                                                                        stat.S_IFCHR, stat.S_IFBLK]
    assert (fifo.mode, chr_.rdev, blk.rdev, fifo.layout) == (0o640, 0x103, 0x800, None)
    reg = ns.mknod("/reg", stat.S_IFREG | 0o600, 0, 2.0, c)      # mknod of a regular file: no objects yet
    assert stat.S_ISREG(reg.st_mode) and reg.layout is None
    assert err(ns.mknod, "/dir", stat.S_IFDIR | 0o755, 0, 3.0, c) == "EINVAL"
    ns.mkdir("/pub", 2.0, 0o777, c, None)
    assert err(ns.mknod, "/pub/dev", stat.S_IFCHR | 0o666, 0x103, 3.0, USER) == "EPERM"   # devices: root only
    assert stat.S_ISFIFO(ns.mknod("/pub/fifo", stat.S_IFIFO | 0o600, 0, 3.0, USER).st_mode)
    assert err(ns.setattr, "/fifo", 4.0, c, size=10) == "EINVAL"  # no size, no objects for a special file
    assert err(ns.setstripe, "/sock", StripeSpec(1), 4.0, c) == "EINVAL"
    ns.close()


def test_node_types_and_links_survive_reopening_the_store(tmp_path):
    ns = open_ns(tmp_path)
    c = Cred()
    ns.mkdir("/d", 2.0, 0o755, c, None)
    f = ns.create("/d/data", 2.0, 0o644, c, None)
    ns.link("/d/data", "/hard", 3.0, c)
    ns.link("/d/data", "/d/hard2", 3.0, c)
    ns.unlink("/d/data", 4.0, c)                                 # the name the inode's row held goes first
    ns.symlink("/d/link", "../hard", 3.0, c)
    ns.mknod("/fifo", stat.S_IFIFO | 0o600, 0, 3.0, c)
    ns.mknod("/sda1", stat.S_IFBLK | 0o660, 0x801, 3.0, c)
    ns.mknod("/sock", stat.S_IFSOCK | 0o777, 0, 3.0, c)
    ns.unlink("/sock", 4.0, c)
    ns.rename("/d/hard2", "/renamed", 5.0, c)
    ns.close()

    again = open_ns(tmp_path)
    assert sorted(n for n, _ in again.readdir("/", c)) == ["d", "fifo", "hard", "renamed", "sda1"]
    assert sorted(n for n, _ in again.readdir("/d", c)) == ["link"]
    hard = again.lookup("/hard", c)
    assert hard is again.lookup("/renamed", c) and hard.nlink == 2 and hard.fid == f.fid
    assert hard.layout == f.layout
    assert again.readlink("/d/link", c) == "../hard"
    assert stat.S_ISLNK(again.lookup("/d/link", c).st_mode)
    assert stat.S_ISFIFO(again.lookup("/fifo", c).st_mode)
    sda = again.lookup("/sda1", c)
    assert (stat.S_IFMT(sda.st_mode), sda.mode, sda.rdev) == (stat.S_IFBLK, 0o660, 0x801)
    assert again.unlink("/hard", 6.0, c) == []
    assert again.unlink("/renamed", 6.0, c) == list(f.layout.objects)
    again.close()
    third = open_ns(tmp_path)   # the last unlink's removals persisted too
    assert sorted(n for n, _ in third.readdir("/", c)) == ["d", "fifo", "sda1"]
    third.close()


def test_the_mds_checks_the_callers_credentials(tmp_path):
    """What the MDS refuses itself, whatever the client's kernel checked before (a client without
    default_permissions, lfs, the SDK): utimensat, chown, chmod's setgid and sticky directories."""
    ns = open_ns(tmp_path)
    c, alice, bob = Cred(), Cred(1000, 1000, (3000,)), Cred(1001, 1001)
    ns.mkdir("/t", 2.0, 0o1777, c, None)
    ns.create("/t/a", 2.0, 0o644, alice, None)
    assert err(ns.setattr, "/t/a", 3.0, bob, mtime=5.0, explicit_times=True) == "EPERM"
    assert err(ns.setattr, "/t/a", 3.0, bob, mtime=5.0) == "EACCES"     # to now: needs write permission
    ns.setattr("/t/a", 3.0, alice, atime=7.0, explicit_times=True)      # the owner, atime only (mtime omitted)
    a = ns.lookup("/t/a", c)
    assert (a.atime, a.mtime, a.ctime) == (7.0, 2.0, 3.0)
    assert err(ns.setattr, "/t/a", 4.0, alice, uid=1001) == "EPERM"
    assert err(ns.setattr, "/t/a", 4.0, alice, gid=0) == "EPERM"
    assert err(ns.setattr, "/t/a", 4.0, bob, gid=1001) == "EPERM"
    ns.setattr("/t/a", 4.0, alice, gid=3000)                            # a supplementary group of hers
    ns.setattr("/t/a", 5.0, alice, mode=0o2755)
    assert ns.lookup("/t/a", c).mode == 0o2755                          # setgid: she is in the file's group
    ns.setattr("/t/a", 5.0, c, gid=0)
    ns.setattr("/t/a", 5.0, alice, mode=0o2755)
    assert ns.lookup("/t/a", c).mode == 0o755                           # not in group 0: setgid dropped
    ns.setattr("/t/a", 5.0, c, mode=0o6755)
    ns.setattr("/t/a", 6.0, c, uid=1001)
    assert ns.lookup("/t/a", c).mode == 0o755                           # chown drops setuid and setgid
    assert err(ns.unlink, "/t/a", 7.0, alice) == "EPERM"                # sticky: not hers any more
    assert err(ns.rename, "/t/a", "/t/b", 7.0, alice) == "EPERM"
    ns.close()


def test_only_setuid_and_setgid_may_be_dropped_by_another_user(tmp_path):
    ns = open_ns(tmp_path)
    c, bob = Cred(), Cred(1001, 1001)
    ns.create("/f", 2.0, 0o6777, c, None)
    assert err(ns.setattr, "/f", 3.0, bob, mode=0o6777) == "EPERM"      # no change is still chmod: owner only
    assert err(ns.setattr, "/f", 3.0, bob, mode=0o777 & ~0o2) == "EPERM"
    ns.setattr("/f", 3.0, bob, mode=0o777)                              # what a writer's kernel sends
    assert ns.lookup("/f", c).mode == 0o777
    ns.setattr("/f", 4.0, bob, size=10)                                 # a write by another user
    ns.setattr("/f", 4.0, c, mode=0o6777)
    ns.setattr("/f", 5.0, bob, size=20, grow_only=True)
    assert ns.lookup("/f", c).mode == 0o777
    ns.setattr("/f", 5.0, c, mode=0o6777)
    ns.setattr("/f", 6.0, c, size=30)                                   # root keeps them (CAP_FSETID)
    assert ns.lookup("/f", c).mode == 0o6777
    ns.close()


def test_lfs_find_by_node_type(tmp_path):
    ns = open_ns(tmp_path)
    c = Cred()
    ns.mkdir("/d", 2.0, 0o755, c, None)
    ns.create("/d/f", 2.0, 0o644, c, None)
    ns.link("/d/f", "/d/g", 2.0, c)
    ns.symlink("/d/l", "f", 2.0, c)
    ns.mknod("/d/p", stat.S_IFIFO | 0o644, 0, 2.0, c)
    ns.mknod("/d/s", stat.S_IFSOCK | 0o644, 0, 2.0, c)
    ns.mknod("/d/c", stat.S_IFCHR | 0o644, 0x103, 2.0, c)
    ns.mknod("/d/b", stat.S_IFBLK | 0o644, 0x800, 2.0, c)
    got = {t: lfind.find(ns.ns, "/d", lfind.FindQuery(type=t)) for t in lfind.TYPES}
    assert got == {"f": ["/d/f", "/d/g"], "d": ["/d"], "l": ["/d/l"], "p": ["/d/p"], "s": ["/d/s"],
                   "c": ["/d/c"], "b": ["/d/b"]}
    assert err(lfind.find, ns.ns, "/d", lfind.FindQuery(type="x")) == "EINVAL"
    ns.close()


def test_a_setgid_directory_gives_its_group(tmp_path):
    ns = open_ns(tmp_path)
    c, alice = Cred(), Cred(1000, 1000)
    ns.mkdir("/team", 2.0, 0o2777, c, None)
    ns.setattr("/team", 2.0, c, gid=3000)
    ns.setattr("/team", 2.0, c, mode=0o2777)
    f = ns.create("/team/f", 3.0, 0o644, alice, None)
    d = ns.mkdir("/team/d", 3.0, 0o755, alice, None)
    s = ns.symlink("/team/s", "f", 3.0, alice)
    assert (f.uid, f.gid, d.gid, s.gid) == (1000, 3000, 3000, 3000)
    assert d.mode == 0o2755 and f.mode == 0o644                        # subdirectories inherit the bit
    assert ns.create("/g", 3.0, 0o644, c, None).gid == 0
    ns.close()


def test_nanosecond_times_and_xattrs_survive_reopening_the_store(tmp_path):
    ns = open_ns(tmp_path)
    c = Cred()
    t0 = 1_764_000_000_123_456_789                                  # a double would keep ~240 ns of this
    ns.create("/f", t0, 0o644, c, None)
    ns.setattr("/f", t0 + 5, c, atime=t0 + 1, mtime=t0 + 2, explicit_times=True)
    ns.set_xattr("/f", "security.selinux", b"system_u:object_r:tmp_t:s0\0", 0, t0 + 6, c)
    ns.set_xattr("/f", "trusted.lov_hint", b"\x01\x02", 0, t0 + 7, c)
    ns.set_xattr("/f", "user.k", b"v", 0, t0 + 8, c)
    ns.close()
    again = open_ns(tmp_path)
    n = again.lookup("/f", c)
    assert (n.atime, n.mtime, n.ctime) == (t0 + 1, t0 + 2, t0 + 8)
    assert again.list_xattrs("/f", c) == ["security.selinux", "trusted.lov_hint", "user.k"]
    assert again.get_xattr("/f", "trusted.lov_hint", c) == b"\x01\x02"
    assert again.has_privileged_xattrs(n.ino)
    again.close()


def test_xattr_namespaces_as_linux_checks_them(tmp_path):
    ns = open_ns(tmp_path)
    root = Cred()
    ns.create("/f", 1, 0o644, root, None)
    ns.set_xattr("/f", "security.selinux", b"ctx", 0, 2, root)
    ns.set_xattr("/f", "trusted.t", b"x", 0, 2, root)
    ns.set_xattr("/f", "user.u", b"y", 0, 2, root)
    assert ns.get_xattr("/f", "security.selinux", USER) == b"ctx"        # security.*: anyone reads
    assert err(ns.get_xattr, "/f", "trusted.t", USER) == "ENODATA"      # trusted.*: not there for others
    assert ns.list_xattrs("/f", USER) == ["security.selinux", "user.u"]
    for name in ("security.selinux", "security.capability", "trusted.t"):
        assert err(ns.set_xattr, "/f", name, b"z", 0, 3, USER) == "EPERM"
    for name in ("security.selinux", "trusted.t"):
        assert err(ns.remove_xattr, "/f", name, 3, USER) == "EPERM"
    ns.set_xattr("/f", "security.capability", b"cap", 0, 2, root)
    assert err(ns.remove_xattr, "/f", "security.capability", 3, USER) == "EACCES"   # killpriv: a writer's only
    assert err(ns.set_xattr, "/f", "user.u", b"z", 0, 3, USER) == "EACCES"   # no write permission
    assert err(ns.set_xattr, "/f", "system.posix_acl_access", b"z", 0, 3, root) == "EOPNOTSUPP"
    ns.create("/mine", 1, 0o444, root, None)
    ns.setattr("/mine", 1, root, uid=USER.uid, gid=USER.gid)
    assert err(ns.set_xattr, "/mine", "user.u", b"z", 0, 3, USER) == "EACCES"  # the owner too, without w
    ns.mkdir("/t", 1, 0o1777, root, None)
    assert err(ns.set_xattr, "/t", "user.u", b"z", 0, 3, USER) == "EPERM"      # sticky: owner only
    ns.symlink("/l", "f", 1, root)
    assert err(ns.set_xattr, "/l", "user.u", b"z", 0, 3, root) == "EPERM"      # user.*: files and dirs only
    ns.create("/private", 1, 0o600, root, None)
    ns.set_xattr("/private", "user.u", b"y", 0, 2, root)
    assert err(ns.get_xattr, "/private", "user.u", USER) == "EACCES"
    assert ns.lookup("/f", root).ctime == 2                                    # refusals changed nothing
    ns.setattr("/f", 4, root, mode=0o666)
    ns.remove_xattr("/f", "security.capability", 5, USER)                      # a writer's write drops it
    ns.close()


def test_which_times_each_call_changes(tmp_path):
    ns = open_ns(tmp_path)
    ns.ns.atime_diff_ns = 0   # as Lustre's sanity tests set mdd.*.atime_diff=0: every read relatime allows counts
    c = Cred()
    ns.mkdir("/d", 1, 0o755, c, None)
    ns.mkdir("/e", 1, 0o755, c, None)
    ns.create("/d/f", 1, 0o644, c, None)

    def times(p):
        n = ns.lookup(p, c)
        return n.atime, n.mtime, n.ctime
    steps = [  # (call, path to watch, (atime, mtime, ctime) after)
        (lambda: ns.setattr("/d/f", 2, c, size=10, mtime=2), "/d/f", (1, 2, 2)),            # a write
        (lambda: ns.setattr("/d/f", 3, c, mode=0o600), "/d/f", (1, 2, 3)),                   # chmod
        (lambda: ns.setattr("/d/f", 4, c, uid=0, gid=0), "/d/f", (1, 2, 4)),                 # chown, same owner
        (lambda: ns.link("/d/f", "/e/g", 5, c), "/d/f", (1, 2, 5)),
        (lambda: None, "/e", (1, 5, 5)),                                                       # its new parent
        (lambda: ns.unlink("/e/g", 6, c), "/d/f", (1, 2, 6)),
        (lambda: ns.rename("/d/f", "/e/f", 7, c), "/e/f", (1, 2, 7)),
        (lambda: None, "/d", (1, 7, 7)),
        (lambda: ns.setattr("/e/f", 8, c, atime=8, read_atime=True), "/e/f", (8, 2, 7)),     # read: atime only
        (lambda: ns.setattr("/e/f", 9, c, atime=9, read_atime=True), "/e/f", (8, 2, 7)),     # relatime: not again
        (lambda: ns.setattr("/e/f", 10, c, size=0), "/e/f", (8, 10, 10)),                      # truncate
        (lambda: ns.setattr("/e/f", 11, c, atime=11, read_atime=True), "/e/f", (11, 10, 10)),  # after a change
    ]
    for i, (call, path, want) in enumerate(steps):
        call()
        assert times(path) == want, i
    day = 24 * 3600 * 10**9
    ns.setattr("/e/f", 12 + day, c, atime=12 + day, read_atime=True)      # a day later it moves again
    assert times("/e/f")[0] == 12 + day
    ns.setattr("/e/f", 13, c, mode=0o600)
    assert err(ns.setattr, "/e/f", 14, USER, atime=14, read_atime=True) == "EACCES"   # a reader needs r
    # mdd.*.atime_diff, 60 s by default: a read relatime would count, no more than that after the stored
    # atime, is not saved; one more than that after it is
    ns.ns.atime_diff_ns = 60 * 10**9
    ns.setattr("/e/f", 20 + day, c, size=1)                                  # a change: relatime allows a read
    ns.setattr("/e/f", 12 + day + 60 * 10**9, c, atime=12 + day + 60 * 10**9, read_atime=True)
    assert times("/e/f")[0] == 12 + day
    ns.setattr("/e/f", 13 + day + 60 * 10**9, c, atime=13 + day + 60 * 10**9, read_atime=True)
    assert times("/e/f")[0] == 13 + day + 60 * 10**9
    ns.close()


def test_a_file_unlinked_while_open_is_an_orphan_until_its_fid_path_goes(tmp_path):
    ns = open_ns(tmp_path)
    c = Cred()
    f = ns.create("/x", 1, 0o644, c, None)
    objects = list(f.layout.objects)
    assert ns.unlink("/x", 2, c, open_=True) == []                 # the name goes, the objects stay
    assert err(ns.lookup, "/x", c) == "ENOENT" and ns.readdir("/", c) == []
    orphan = f"/.lustre/fid/{f.fid}"
    assert ns.lookup(orphan, c) is f and f.nlink == 0
    ns.create("/y", 1, 0o644, c, None)
    assert err(ns.lookup, f"/.lustre/fid/{ns.lookup('/y', c).fid}", USER) == "EACCES"   # no walk: root's only
    ns.setattr(orphan, 3, c, size=10, mtime=3)                      # the open file is still written
    assert ns.unlink(orphan, 4, c) == objects                       # the last close: its objects go
    assert err(ns.lookup, orphan, c) == "ENOENT"
    assert err(ns.unlink, f"/.lustre/fid/{ns.lookup('/', c).fid}", 5, c) == "EBUSY"   # not an orphan
    ns.close()


def stored_counters(tmp_path) -> dict:
    """The counters row as the MDT's SQLite file holds it now."""
    with sqlite3.connect(tmp_path / "mdt.db") as db:
        (doc,) = db.execute("SELECT doc FROM lustre_meta WHERE fsname = 'testfs'").fetchone()
    return json.loads(doc)


def test_counters_are_stored_ahead_and_never_handed_out_twice_after_a_restart(tmp_path):
    """FIDs, inode numbers and OST object ids are stored RESERVE ahead (as Lustre's MDT takes FID and
    precreated-object ranges), so most creates write no counters, and the store opened again (a restart,
    the standby at failover) goes on past every one handed out, with a gap."""
    ns = open_ns(tmp_path)
    c = Cred()
    made = [ns.create(f"/f{i}", 2.0, 0o644, c, None) for i in range(RESERVE + 5)]
    saved = stored_counters(tmp_path)
    assert saved["next_ino"] == reserve(made[-1].ino + 1) and saved["next_ino"] % RESERVE == 0
    ns.create("/one-more", 3.0, 0o644, c, None)
    assert stored_counters(tmp_path) == saved   # inside the reservation: the counters were not written again
    ns.close()
    again = open_ns(tmp_path)
    new = again.create("/after-restart", 4.0, 0o644, c, None)
    assert new.ino > max(n.ino for n in made) and new.ino == reserve(made[-1].ino + 2)
    assert str(new.fid) not in {str(n.fid) for n in made}
    used = {(o.ost, o.objid) for n in made for o in n.layout.objects}
    assert not {(o.ost, o.objid) for o in new.layout.objects} & used
    again.close()
