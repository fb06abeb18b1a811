"""`lctl get_param` and `lctl set_param` for the twin's client mounts (`twin lustre lctl`): the
parameters of every `twin lustre mount` of the run (services/lustre/client/tunables.py), read from and
written to the live client through its socket (client/control.py), printed as lctl prints them:

    $ lctl get_param osc.*.max_dirty_mb
    osc.hot-OST0000-osc-ffff8d2c5d3f.max_dirty_mb=2000
    ...
    $ lctl set_param llite.*.max_read_ahead_mb=0
    llite.hot-ffff8d2c5d3f.max_read_ahead_mb=0
    $ lctl get_param llite.*.stats
    llite.hot-ffff8d2c5d3f.stats=
    snapshot_time             1765031234.123456789 secs.nsecs
    ...
    open                      4 samples [usecs] 31 904 1210 830034

`llite.*.stats` is the mount's operation counters (client/stats.py); writing anything to it
(`set_param llite.*.stats=clear`) zeroes them.

The MDT's tunables are there too, as lctl shows them on the MDS node (the twin's lctl sees every node
of the filesystem, as on a single-node test setup): `mdd.hot-MDT0000.atime_diff`, asked of the active
MDS (services/lustre/mds/params.py). A value set there is told to every live mount, which sends a
read's atime only when the MDT would keep it.

A pattern is matched as lctl matches its /proc and /sys paths: each dot-separated component a shell
glob (`*` does not cross a dot); a pattern of fewer components matches everything under it. A
pattern that matches nothing, or a bad value, is refused with lctl's message and nothing is changed.
"""

from __future__ import annotations

import errno
import fnmatch
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from emulator.errors import UserError
from services.lustre.client.control import request, socket_path
from services.lustre.client.mount import record_path, records
from services.lustre.client.tunables import bounds_of
from services.lustre.mds.params import parse_value

if TYPE_CHECKING:
    from services.lustre.sdk import LustreAdmin

MDS_WAIT_S = 5.0   # for an MDS failing over to answer, as lctl on a node waits for the target


class LctlError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.errno = code


@dataclass
class Mount:
    mountpoint: str
    sock: Path
    params: dict[str, int] = field(default_factory=dict)
    stats: list[str] = field(default_factory=list)   # its statistics files (llite.*.stats)


def mounts(run_path: Path) -> list[Mount]:
    """Every live mount of the run with its parameters (a mount whose client does not answer is skipped,
    as a node's lctl shows only the clients mounted)."""
    out = []
    for rec in records(run_path):
        sock = socket_path(record_path(run_path, rec["mountpoint"]))
        try:
            listed = request(sock, {"op": "list"})
            params, stats = listed["params"], listed.get("stats", [])
        except (OSError, ValueError, KeyError):
            continue
        out.append(Mount(rec["mountpoint"], sock, params, stats))
    return out


def matches(pattern: str, name: str) -> bool:
    pat, parts = pattern.split("."), name.split(".")
    if len(pat) > len(parts):
        return False
    return all(fnmatch.fnmatchcase(p, g) for p, g in zip(parts, pat, strict=False))


@contextmanager
def _mds(run_path: Path) -> Iterator[LustreAdmin]:
    """The twin's Lustre admin client, waiting no longer than MDS_WAIT_S for the active MDS."""
    from emulator.rundir import RunDir
    from services.lustre.sdk import LustreAdmin

    run = RunDir(run_path)
    with LustreAdmin(run, run.load_manifest(), failover_timeout=MDS_WAIT_S) as lu:
        yield lu


def _mdt_params(run_path: Path, pattern: str) -> list[tuple[str, int, int, int]]:
    """(name, value, min, max) of the MDT's tunables the pattern may match; none when its first component
    cannot match `mdd` (no call to the MDS then) or the twin has no Lustre MDS that answers."""
    if not fnmatch.fnmatchcase("mdd", pattern.split(".")[0]):
        return []
    try:
        with _mds(run_path) as lu:
            return [(p.name, p.value, p.min, p.max) for p in lu.mdt_params() if matches(pattern, p.name)]
    except (UserError, OSError):   # no Lustre, or no MDS answers (ClientError is an OSError)
        return []


def _set_mdt_param(run_path: Path, name: str, value: str) -> int:
    from services.lustre.client.core import ClientError

    try:
        with _mds(run_path) as lu:
            return int(lu.set_mdt_param(name, value).value)
    except ClientError as e:
        raise LctlError(e.errno, f"error: set_param: setting /sys/fs/lustre/{_param_path(name)}={value}: "
                                 f"{os.strerror(e.errno)} ({e.strerror})") from None


def _param_path(pattern: str) -> str:
    return pattern.replace(".", "/")


def _stats(m: Mount, name: str) -> str:
    r = request(m.sock, {"op": "stats", "name": name})
    if "error" in r:
        raise LctlError(errno.ENOENT, f"error: get_param: {r['message']}")
    return str(r["text"])


def get_param(run_path: Path, patterns: list[str], values_only: bool = False, names_only: bool = False) -> str:
    """NAME=VALUE a line; a statistics file as lctl prints a value of several lines: `NAME=`, then its
    lines."""
    ms = mounts(run_path)
    lines = []
    for pattern in patterns:
        hits = sorted([(n, m, v) for m in ms for n, v in m.params.items() if matches(pattern, n)]
                      + [(n, m, None) for m in ms for n in m.stats if matches(pattern, n)]
                      + [(n, None, v) for n, v, _lo, _hi in _mdt_params(run_path, pattern)], key=lambda h: h[0])
        if not hits:
            raise LctlError(errno.ENOENT, f"error: get_param: param_path '{_param_path(pattern)}': "
                                          f"No such file or directory")
        for n, m, v in hits:
            if names_only:
                lines.append(n)
                continue
            if v is not None:
                lines.append(str(v) if values_only else f"{n}={v}")
            elif m is not None:
                text = _stats(m, n).rstrip("\n")
                lines.append(text if values_only else f"{n}=\n{text}")
    return "".join(line + "\n" for line in lines)


def set_param(run_path: Path, assignments: list[str], quiet: bool = False) -> str:
    """Every assignment checked (names and values) before any is made, so bad input changes nothing."""
    ms = mounts(run_path)
    plan: list[tuple[Mount | None, str, str]] = []   # (None: the MDT's, name, value)
    for a in assignments:
        pattern, eq, value = a.partition("=")
        if not eq or not pattern:
            raise LctlError(errno.EINVAL, f"error: set_param: setting {a}: Invalid argument "
                                          f"(expected name=value)")
        cleared = [(m, n) for m in ms for n in m.stats if matches(pattern, n)]
        hits = [(m, n) for m in ms for n in sorted(m.params) if matches(pattern, n)]
        mdt = _mdt_params(run_path, pattern)
        if not hits and not cleared and not mdt:
            raise LctlError(errno.ENOENT, f"error: set_param: param_path '{_param_path(pattern)}': "
                                          f"No such file or directory")
        plan += [(m, n, value) for m, n in cleared]   # any value written to a statistics file zeroes it
        for n, _v, lo, hi in mdt:
            try:
                ok = lo <= parse_value(value) <= hi
            except ValueError:
                ok = False
            if not ok:
                raise LctlError(errno.EINVAL, f"error: set_param: setting /sys/fs/lustre/{_param_path(n)}="
                                              f"{value}: Invalid argument ({lo}..{hi})")
            plan.append((None, n, value))
        if not hits:
            continue
        try:
            v = int(value, 0)
        except ValueError:
            v = None
        lo, hi = bounds_of(hits[0][1])
        if v is None or not lo <= v <= hi:
            raise LctlError(errno.EINVAL, f"error: set_param: setting /sys/fs/lustre/{_param_path(hits[0][1])}="
                                          f"{value}: Invalid argument ({lo}..{hi})")
        plan += [(m, n, value) for m, n in hits]
    out = []
    for m, n, value in plan:
        if m is None:
            v = _set_mdt_param(run_path, n, value)
            for each in ms:   # every live mount sends a read's atime by the MDT's rule
                try:
                    request(each.sock, {"op": "mdt_param", "name": n, "value": v})
                except OSError:
                    pass   # unmounted since: nothing to tell
            out.append(f"{n}={v}")
            continue
        if n in m.stats:
            request(m.sock, {"op": "clear", "name": n})
            out.append(f"{n}={value}")
            continue
        r = request(m.sock, {"op": "set", "name": n, "value": value})
        if "error" in r:
            raise LctlError(getattr(errno, r["error"], errno.EINVAL),
                            f"error: set_param: setting /sys/fs/lustre/{_param_path(n)}={value}: "
                            f"{'Invalid argument' if r['error'] == 'EINVAL' else r['message']} ({r['message']})")
        out.append(f"{n}={r['value']}")
    return "" if quiet else "".join(line + "\n" for line in out)
