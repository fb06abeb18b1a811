"""Permissions as another user on a real mount (issue 19): the caller's uid, gid and supplementary groups
(from FUSE and /proc) go to the MDS, which refuses as Linux does (EACCES for mode bits, EPERM for sticky
directories, chown and explicit times), and the client checks an open's access mode as llite does.
Each call runs in a process started with `setpriv` as that user."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from services.lustre.client.core import LustreClient
from tests.lustre.conftest import LustreMount, lustre_mount, needs_fuse

pytestmark = needs_fuse
NOBODY, ALICE = 65534, 1000


@pytest.fixture(scope="module")
def fs() -> Iterator[tuple[LustreMount, Path, LustreClient]]:
    # Not under pytest's base directory: /tmp/pytest-of-root is 0700, and other users must reach the mount.
    base = Path(tempfile.mkdtemp(prefix="lustre-perms-", dir="/tmp"))
    os.chmod(base, 0o755)
    try:
        for m in lustre_mount(base, "rack"):
            os.chmod(m.mnt, 0o755)
            client = LustreClient.from_manifest(m.manifest, failover_timeout=30.0)
            try:
                yield m, m.mnt, client
            finally:
                client.close()
    finally:
        shutil.rmtree(base, ignore_errors=True)


def as_user(statement: str, uid: int = NOBODY, gid: int = NOBODY, groups: tuple[int, ...] = ()) -> str:
    """Run one Python statement (os imported) as uid:gid with `groups`: "OK" or the errno's name."""
    code = ("import errno, os\ntry:\n    " + statement + "\n    print('OK')\n"
            "except OSError as e:\n    print(errno.errorcode[e.errno])")
    who = [f"--reuid={uid}", f"--regid={gid}"] + ([f"--groups={','.join(map(str, groups))}"] if groups
                                                   else ["--clear-groups"])
    r = subprocess.run(["setpriv", *who, "/usr/bin/python3", "-c", code], capture_output=True, text=True, cwd="/",
                       timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def directory_of(d: Path, **files: tuple[bytes, int]) -> Path:
    """`d` made, with each file given its content and mode."""
    d.mkdir()
    for name, (data, mode) in files.items():
        (d / name).write_bytes(data)
        os.chmod(d / name, mode)
    return d


def test_mode_bits_refuse_other_users(fs):
    m, mnt, client = fs
    d = directory_of(mnt / "modes", private=(b"secret", 0o600), public=(b"hello", 0o644))
    pub, priv = repr(str(d / "public")), repr(str(d / "private"))
    answers = {
        f"open({pub}).read()": "OK",
        f"open({priv}).read()": "EACCES",
        f"open({pub}, 'ab')": "EACCES",
        f"os.truncate({pub}, 0)": "EACCES",
        f"assert not os.access({priv}, os.R_OK)": "OK",
        f"assert os.access({pub}, os.R_OK)": "OK",
        f"open({str(d / 'new')!r}, 'w')": "EACCES",              # no w on the directory
        f"os.mkdir({str(d / 'sub')!r})": "EACCES",
        f"os.unlink({pub})": "EACCES",
        f"os.rename({pub}, {str(d / 'moved')!r})": "EACCES",
        f"os.symlink('x', {str(d / 'sl')!r})": "EACCES",
        f"os.mkfifo({str(d / 'fifo')!r})": "EACCES",
        # fs.protected_hardlinks: linking another user's file one may not write is EPERM (as on ext4)
        f"os.link({pub}, {str(d / 'hl')!r})": "EPERM",
    }
    assert {statement: as_user(statement) for statement in answers} == answers
    assert sorted(os.listdir(d)) == ["private", "public"]                    # nothing changed
    os.chmod(d, 0o700)
    assert as_user(f"os.stat({str(d / 'public')!r})") == "EACCES"             # no x on the directory
    os.chmod(d, 0o755)


def test_supplementary_groups_reach_the_mds(fs):
    m, mnt, client = fs
    d = mnt / "groups"
    d.mkdir()
    os.chown(d, 0, 2000)
    os.chmod(d, 0o770)
    (d / "shared").write_bytes(b"team data")
    os.chown(d / "shared", 0, 2000)
    os.chmod(d / "shared", 0o640)
    assert as_user(f"open({str(d / 'shared')!r}).read()") == "EACCES"
    assert as_user(f"open({str(d / 'shared')!r}).read()", groups=(2000,)) == "OK"
    assert as_user(f"open({str(d / 'made')!r}, 'w').close()", groups=(2000,)) == "OK"   # w+x via the group
    assert (os.stat(d / "made").st_uid, os.stat(d / "made").st_gid) == (NOBODY, NOBODY)
    os.chmod(d, 0o2770)                                                        # setgid: new entries take its group
    assert as_user(f"os.mkdir({str(d / 'sub')!r})", groups=(2000,)) == "OK"
    st_sub = os.stat(d / "sub")
    assert (st_sub.st_gid, stat.S_IMODE(st_sub.st_mode) & stat.S_ISGID) == (2000, stat.S_ISGID)


def test_sticky_directory(fs):
    m, mnt, client = fs
    t = mnt / "tmp"
    t.mkdir()
    os.chmod(t, 0o1777)
    assert as_user(f"open({str(t / 'alices')!r}, 'w').close()", ALICE, ALICE) == "OK"
    assert as_user(f"os.unlink({str(t / 'alices')!r})") == "EPERM"
    assert as_user(f"os.rename({str(t / 'alices')!r}, {str(t / 'mine')!r})") == "EPERM"
    assert as_user(f"open({str(t / 'mine')!r}, 'w').close()") == "OK"
    assert as_user(f"os.rename({str(t / 'mine')!r}, {str(t / 'alices')!r})") == "EPERM"   # over hers
    assert as_user(f"os.unlink({str(t / 'alices')!r})", ALICE, ALICE) == "OK"
    assert sorted(os.listdir(t)) == ["mine"]


def test_chown_rules_and_setuid_cleared(fs):
    m, mnt, client = fs
    d = mnt / "own"
    d.mkdir()
    os.chmod(d, 0o777)
    f = d / "alices"
    assert as_user(f"open({str(f)!r}, 'w').close()", ALICE, ALICE, (3000,)) == "OK"
    assert as_user(f"os.chown({str(f)!r}, {NOBODY}, -1)", ALICE, ALICE) == "EPERM"   # giving a file away
    assert as_user(f"os.chown({str(f)!r}, -1, 0)", ALICE, ALICE) == "EPERM"          # a group she is not in
    assert as_user(f"os.chown({str(f)!r}, -1, 3000)", ALICE, ALICE, (3000,)) == "OK"  # one she is in
    assert as_user(f"os.chown({str(f)!r}, -1, {ALICE})", NOBODY, NOBODY) == "EPERM"  # not the owner
    assert os.stat(f).st_gid == 3000
    assert as_user(f"os.chmod({str(f)!r}, 0o644)") == "EPERM"
    os.chmod(f, 0o6755)
    assert stat.S_IMODE(client.getattr(f"/own/{f.name}").mode) == 0o6755
    os.chown(f, 1234, 1234)
    assert stat.S_IMODE(client.getattr(f"/own/{f.name}").mode) == 0o755             # setuid and setgid gone
    assert stat.S_IMODE(os.stat(f).st_mode) == 0o755
    os.chmod(f, 0o6777)
    assert as_user(f"open({str(f)!r}, 'ab').write(b'x')") == "OK"                  # a write by another user
    assert stat.S_IMODE(client.getattr(f"/own/{f.name}").mode) == 0o777             # drops them too


def test_utimensat_rules_and_ctime(fs):
    m, mnt, client = fs
    d = directory_of(mnt / "times", shared=(b"x", 0o666), ro=(b"x", 0o644))
    assert as_user(f"os.utime({str(d / 'shared')!r})") == "OK"                     # to now: any writer
    assert as_user(f"os.utime({str(d / 'shared')!r}, (1, 2))") == "EPERM"          # explicit: the owner only
    assert as_user(f"os.utime({str(d / 'ro')!r})") == "EACCES"
    os.utime(d / "ro", (1_000_000, 2_000_000))
    before = client.getattr("/times/ro")
    assert (before.atime_ns, before.mtime_ns) == (1_000_000 * 10**9, 2_000_000 * 10**9)
    subprocess.run(["touch", "-a", "-d", "@3000000", str(d / "ro")], check=True)  # mtime: UTIME_OMIT
    a = client.getattr("/times/ro")
    assert (a.atime_ns, a.mtime_ns) == (3_000_000 * 10**9, 2_000_000 * 10**9)
    subprocess.run(["touch", "-m", str(d / "ro")], check=True)                    # mtime UTIME_NOW, atime OMIT
    a = client.getattr("/times/ro")
    assert a.atime_ns == 3_000_000 * 10**9 and a.mtime_ns > 2_000_000 * 10**9
    before = a
    os.chmod(d / "ro", 0o600)
    after_chmod = client.getattr("/times/ro")
    assert after_chmod.ctime_ns > before.ctime_ns and after_chmod.mtime_ns == before.mtime_ns   # chmod: ctime
    os.link(d / "ro", d / "ro2")
    after_link = client.getattr("/times/ro")
    assert after_link.ctime_ns > after_chmod.ctime_ns and after_link.mtime_ns == before.mtime_ns
    dir_before = client.getattr("/times")
    os.symlink("ro", d / "sl")
    dir_after = client.getattr("/times")
    assert dir_after.mtime_ns > dir_before.mtime_ns and dir_after.ctime_ns > dir_before.ctime_ns
