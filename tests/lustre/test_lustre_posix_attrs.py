"""Times and extended attributes on a real mount (issue 19), with the client cache on and a second mount
watching: nanosecond timestamps end to end (utimensat, stat, `stat -c %y`), which of atime, mtime and
ctime each call changes (read under relatime), security.* and trusted.* xattrs as root and refused to
another user as Linux refuses them, and all of it back the same after the active MDS is killed."""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from clustertwin.v1 import lustre_pb2 as pb
from services.lustre.client.core import ClientError, LustreClient
from services.lustre.client.fuse import selinux_enabled
from tests.lustre.conftest import LustreMount, lustre_mount, needs_fuse, with_second_mount
from tests.lustre.test_lustre_posix_perms import ALICE, NOBODY, as_user

pytestmark = needs_fuse
T0 = 1_764_000_000_123_456_789   # nanoseconds no double keeps (about 240 ns of resolution at this epoch)
CAP = (0x02000000).to_bytes(4, "little") + bytes(16)   # a vfs_cap_data v2 with no capabilities


@pytest.fixture(scope="module")
def two() -> Iterator[tuple[LustreMount, Path, Path, LustreClient]]:
    # Not under pytest's base directory: /tmp/pytest-of-root is 0700, and other users must reach the mount.
    base = Path(tempfile.mkdtemp(prefix="lustre-attrs-", dir="/tmp"))
    os.chmod(base, 0o755)
    try:
        for m in lustre_mount(base, "rack"):
            os.chmod(m.mnt, 0o755)
            yield from with_second_mount(m, base / "mnt2")
    finally:
        shutil.rmtree(base, ignore_errors=True)


def times(p: Path) -> tuple[int, int, int]:
    s = os.stat(p)
    return s.st_atime_ns, s.st_mtime_ns, s.st_ctime_ns


def test_nanosecond_timestamps_end_to_end(two):
    m, a, b, client = two
    d = a / "ns"
    d.mkdir()
    os.chmod(d, 0o777)
    (d / "f").write_bytes(b"x")
    os.utime(d / "f", ns=(T0, T0 + 1))
    for mnt in (a, b):
        assert times(mnt / "ns" / "f")[:2] == (T0, T0 + 1)
    attr = client.getattr("/ns/f")
    assert (attr.atime_ns, attr.mtime_ns) == (T0, T0 + 1)
    shown = subprocess.run(["stat", "-c", "%x|%y", str(b / "ns" / "f")], capture_output=True, text=True,
                           check=True, env=os.environ | {"TZ": "UTC"}).stdout.strip()
    assert shown == "2025-11-24 16:00:00.123456789 +0000|2025-11-24 16:00:00.123456790 +0000"
    assert as_user(f"open({str(d / 'alices')!r}, 'w').close()", ALICE, ALICE) == "OK"
    assert as_user(f"os.utime({str(d / 'alices')!r}, ns=({T0 + 7}, {T0 + 9}))", ALICE, ALICE) == "OK"
    assert times(b / "ns" / "alices")[:2] == (T0 + 7, T0 + 9)
    assert as_user(f"os.utime({str(d / 'alices')!r}, ns=(1, 1))") == "EPERM"   # not hers: explicit times
    assert times(a / "ns" / "alices")[:2] == (T0 + 7, T0 + 9)


def test_touch_never_moves_mtime_back(two):
    """`touch` right after a create (pathlib's touch() twice): under the page cache the kernel stamps a
    file's "now" with its tick-coarse clock, which can be older than the MDS's stamp of the create just
    before; the mount takes utime(NULL) on its own clock. Seen the same from both mounts."""
    m, a, b, client = two
    (a / "touch").mkdir()
    for i in range(40):
        p = a / "touch" / f"f{i}"
        p.touch()
        created = os.stat(p).st_mtime_ns
        os.utime(p, None)
        touched = os.stat(p).st_mtime_ns
        assert touched >= created, i
        assert os.stat(b / "touch" / f"f{i}").st_mtime_ns == touched, i


def watch(b: Path, *names: str) -> dict[str, tuple[int, int, int]]:
    return {n: times(b / n) for n in names}


def changed(before: dict, after: dict) -> dict[str, str]:
    """For each watched path, which of "amc" (atime, mtime, ctime) moved."""
    return {n: "".join(k for k, x, y in zip("amc", before[n], after[n], strict=True) if x != y) for n in before}


def age(p: Path) -> None:
    """`p`'s atime an hour back (its mtime kept)."""
    os.utime(p, ns=(time.time_ns() - 3600 * 10**9, os.stat(p).st_mtime_ns))


def test_which_times_each_call_changes_seen_from_the_other_mount(two):
    m, a, b, client = two
    (a / "tc").mkdir()
    (a / "tc2").mkdir()
    os.chmod(a / "tc", 0o777)
    (a / "tc" / "f").write_bytes(b"0123456789")
    os.link(a / "tc" / "f", a / "tc" / "keep")   # the inode's times seen under a name rename leaves alone
    f = str(a / "tc" / "f")
    # atimes an hour back, so the first read and listing below move them past mdd.*.atime_diff (60 s)
    age(a / "tc" / "f")
    age(a / "tc2")
    steps = [  # what is done on mount a (root unless a user is named), what mount b sees move
        ("write", lambda: open(f, "r+b").write(b"X"), {"tc/f": "mc", "tc": ""}),
        ("read, atime not after mtime", lambda: open(f, "rb").read(), {"tc/f": "a", "tc": ""}),
        ("read again (relatime)", lambda: open(f, "rb").read(), {"tc/f": "", "tc": ""}),
        ("chmod", lambda: os.chmod(f, 0o666), {"tc/f": "c", "tc": ""}),
        ("chown to the same owner", lambda: os.chown(f, 0, 0), {"tc/f": "c", "tc": ""}),
        ("link", lambda: os.link(f, a / "tc2" / "g"), {"tc/f": "c", "tc": "", "tc2": "mc"}),
        ("unlink", lambda: os.unlink(a / "tc2" / "g"), {"tc/f": "c", "tc": "", "tc2": "mc"}),
        ("rename", lambda: os.rename(f, a / "tc2" / "f"), {"tc/keep": "c", "tc": "mc", "tc2": "mc"}),
        ("setxattr", lambda: os.setxattr(a / "tc2" / "f", "user.k", b"v"), {"tc2/f": "c", "tc2": ""}),
        ("truncate", lambda: os.truncate(a / "tc2" / "f", 3), {"tc2/f": "mc", "tc2": ""}),
        ("write as another user", lambda: as_user(f"open({str(a / 'tc2' / 'f')!r}, 'ab').write(b'y')"),
         {"tc2/f": "mc"}),
        # relatime would move it (written since), but the atime is the first read's, seconds ago
        ("read within mdd.*.atime_diff", lambda: open(a / "tc2" / "f", "rb").read(), {"tc2/f": ""}),
        ("atime an hour back", lambda: age(a / "tc2" / "f"), {"tc2/f": "ac"}),
        ("read as another user", lambda: as_user(f"open({str(a / 'tc2' / 'f')!r}).read()"), {"tc2/f": "a"}),
        ("mkdir", lambda: (a / "tc2" / "sub").mkdir(), {"tc2": "mc", "tc2/f": ""}),
        ("list, atime not after mtime", lambda: os.listdir(a / "tc2"), {"tc2": "a", "tc2/f": ""}),
        ("list again (relatime)", lambda: os.listdir(a / "tc2"), {"tc2": ""}),
    ]
    seen = {}
    for what, do, want in steps:
        before = watch(b, *want)
        do()
        seen[what] = changed(before, watch(b, *want))
    assert seen == {what: want for what, _do, want in steps}
    assert stat.S_IMODE(os.stat(b / "tc" / "keep").st_mode) == 0o666   # chmod under one name, seen under the other


# security.selinux through a mount: refused on a host without SELinux (Lustre's LU-549), else stored
SELINUX_GET = "ENODATA" if selinux_enabled() else "ENOTSUP"


def test_security_and_trusted_xattrs(two):
    m, a, b, client = two
    d = a / "xa"
    d.mkdir()
    os.chmod(d, 0o755)
    (d / "f").write_bytes(b"data")
    os.chmod(d / "f", 0o666)
    os.setxattr(d / "f", "security.label", b"confidential")
    os.setxattr(d / "f", "trusted.gfid", b"\x01\x02\x03")
    os.setxattr(d / "f", "user.note", b"hi")
    for mnt in (a, b):   # as root, both mounts
        f = mnt / "xa" / "f"
        assert os.getxattr(f, "security.label") == b"confidential"
        assert os.getxattr(f, "trusted.gfid") == b"\x01\x02\x03"
        assert sorted(os.listxattr(f)) == ["lustre.lov", "security.label", "trusted.gfid", "user.note"]
        assert len(os.getxattr(f, "lustre.lov")) == 32 + 24 * len(client.getattr("/xa/f").layout.objects)
    f = repr(str(b / "xa" / "f"))
    answers = {   # another user, through the other mount
        f"assert os.getxattr({f}, 'security.label') == b'confidential'": "OK",
        f"os.getxattr({f}, 'trusted.gfid')": "ENODATA",
        f"assert sorted(os.listxattr({f})) == ['lustre.lov', 'security.label', 'user.note']": "OK",
        f"os.setxattr({f}, 'security.label', b'x')": "EPERM",
        f"os.setxattr({f}, 'security.capability', {CAP!r})": "EPERM",
        f"os.removexattr({f}, 'security.label')": "EPERM",
        f"os.setxattr({f}, 'trusted.gfid', b'x')": "EPERM",
        f"os.removexattr({f}, 'trusted.gfid')": "EPERM",
        f"os.setxattr({f}, 'user.other', b'ok')": "OK",                         # mode 0666: a writer may
        # no POSIX ACLs: a mount without ACL support refuses them, EOPNOTSUPP (95, which errno.errorcode
        # names ENOTSUP); ls -l then stops asking for each file. security.selinux on a host without
        # SELinux: refused as Lustre's llite refuses it (LU-549)
        f"os.getxattr({f}, 'system.posix_acl_access')": "ENOTSUP",
        f"os.getxattr({f}, 'system.posix_acl_default')": "ENOTSUP",
        f"os.getxattr({f}, 'security.selinux')": SELINUX_GET,
        f"os.setxattr({f}, 'security.selinux', b'x')": "EPERM",   # the kernel's check, before the mount's
    }
    assert {s: as_user(s) for s in answers} == answers
    for mnt in (a, b):   # as root, on both mounts: refused before and after the attributes are cached
        for _ in range(2):
            for name in ("system.posix_acl_access", "security.selinux"):
                with pytest.raises(OSError) as e:
                    os.getxattr(mnt / "xa" / "f", name)
                assert e.value.errno == (errno.EOPNOTSUPP if name.startswith("system.") or not selinux_enabled()
                                         else errno.ENODATA), name
    with pytest.raises(OSError) as e:
        os.removexattr(a / "xa" / "f", "system.posix_acl_access")
    assert e.value.errno == errno.EOPNOTSUPP
    if not selinux_enabled():
        for call in (lambda f: os.setxattr(f, "security.selinux", b"system_u:object_r:tmp_t:s0"),
                     lambda f: os.removexattr(f, "security.selinux")):
            with pytest.raises(OSError) as e:
                call(a / "xa" / "f")
            assert e.value.errno == errno.EOPNOTSUPP
        assert "security.selinux" not in client.listxattr("/xa/f")   # nothing reached the MDS
    nobody = pb.LustreCred(uid=NOBODY, gid=NOBODY)
    for call, req in (("Setxattr", pb.LustreMdsSetxattrRequest(path="/xa/f", name="security.x", value=b"1",
                                                               cred=nobody)),
                      ("Removexattr", pb.LustreMdsRemovexattrRequest(path="/xa/f", name="trusted.gfid", cred=nobody)),
                      ("Getxattr", pb.LustreMdsGetxattrRequest(path="/xa/f", name="trusted.gfid", cred=nobody))):
        with pytest.raises(ClientError) as e:   # the MDS checks again, not only the kernel
            client.mdcall(call, req)
        assert e.value.errno == (errno.ENODATA if call == "Getxattr" else errno.EPERM), call
    assert os.getxattr(a / "xa" / "f", "security.label") == b"confidential"   # unchanged
    os.removexattr(b / "xa" / "f", "security.label")
    with pytest.raises(OSError) as e:
        os.getxattr(a / "xa" / "f", "security.label")     # mount a's cache was revoked
    assert e.value.errno == errno.ENODATA


def test_security_capability_is_dropped_by_a_write(two):
    # the kernel's killpriv: a file written (or chowned) by someone loses its file capabilities; the
    # removal reaches the MDS with the writer's credentials
    m, a, b, client = two
    (a / "cap").mkdir()
    os.chmod(a / "cap", 0o755)
    for mnt, who in ((a, NOBODY), (b, ALICE)):
        tool = a / "cap" / f"tool-{who}"
        tool.write_bytes(b"#!/bin/sh\n")
        os.chmod(tool, 0o777)
        os.setxattr(tool, "security.capability", CAP)
        assert os.getxattr(mnt / "cap" / tool.name, "security.capability") == CAP
        assert as_user(f"open({str(mnt / 'cap' / tool.name)!r}, 'r+b').write(b'#')", who, who) == "OK"
        for seen in (a, b):
            with pytest.raises(OSError) as e:
                os.getxattr(seen / "cap" / tool.name, "security.capability")
            assert e.value.errno == errno.ENODATA
        assert (b / "cap" / tool.name).read_bytes() == b"#!/bin/sh\n"


def test_times_and_xattrs_survive_mds_failover(two):
    m, a, b, client = two
    (a / "fo").mkdir()
    (a / "fo" / "f").write_bytes(b"data")
    os.setxattr(a / "fo" / "f", "security.label", b"ctx")
    os.setxattr(a / "fo" / "f", "trusted.t", b"t")
    os.setxattr(a / "fo" / "f", "user.u", b"u")
    os.utime(a / "fo" / "f", ns=(T0 + 11, T0 + 13))
    before = {p: client.getattr(p) for p in ("/fo", "/fo/f")}
    active = client.mdcall("Status", pb.LustreMdsStatusRequest()).name
    os.kill(json.loads((m.run / "daemons.json").read_text())["daemons"][active]["pid"], signal.SIGKILL)
    after = {p: client.getattr(p) for p in before}   # blocks until the standby serves
    assert client.mdcall("Status", pb.LustreMdsStatusRequest()).name != active
    for p, x in before.items():
        y = after[p]
        assert (y.atime_ns, y.mtime_ns, y.ctime_ns, y.privileged_xattrs) == \
               (x.atime_ns, x.mtime_ns, x.ctime_ns, x.privileged_xattrs), p
    for mnt in (a, b):
        f = mnt / "fo" / "f"
        assert times(f) == (after["/fo/f"].atime_ns, T0 + 13, after["/fo/f"].ctime_ns)
        assert times(f)[0] == T0 + 11
        assert [os.getxattr(f, n) for n in ("security.label", "trusted.t", "user.u")] == [b"ctx", b"t", b"u"]


def test_open_with_o_trunc_empties_the_file(two):
    # libfuse asks the kernel for atomic_o_trunc by default: O_TRUNC arrives with the open, not as a setattr
    m, a, b, client = two
    (a / "trunc").mkdir()
    (a / "trunc" / "f").write_bytes(b"this is file A\n")
    age(a / "trunc" / "f")   # the read below then moves atime past mdd.*.atime_diff
    before = times(b / "trunc" / "f")
    (a / "trunc" / "f").write_bytes(b"abcdefg")                              # open(O_WRONLY|O_CREAT|O_TRUNC)
    assert (b / "trunc" / "f").read_bytes() == b"abcdefg"
    open(a / "trunc" / "f", "w").close()
    assert os.stat(b / "trunc" / "f").st_size == 0 and client.getattr("/trunc/f").size == 0
    assert changed({"f": before}, {"f": times(b / "trunc" / "f")}) == {"f": "amc"}
