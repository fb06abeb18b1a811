"""A well-known POSIX file-system suite in the Lustre mount against the local disk, in the same run
(issue 19): CPython's own regression tests for the file system (test_os, test_posix, test_shutil,
test_pathlib, test_tempfile, test_glob, test_fileio) from the pyenv Python, with their working
directory (regrtest's --tempdir) and TMPDIR inside the place under test. pjdfstest is not packaged for
Debian or PyPI and this machine cannot fetch its source. Starts `rack --lustre` (NVMe time model off),
mounts it, runs the suite on local disk and then in the mount, and prints each test case that fails in
the mount but not on local disk, with the first line of its error.

    .venv/bin/python -m bench.lustre_posix [--tests "test_os test_posix ..."] [--show 40]
    .venv/bin/python -m bench --only lustre-posix

Target: the mount passes what local disk passes. Needs root (FUSE).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

from bench.options import parse_options

ROOT = Path(__file__).resolve().parent.parent
TWIN = str(ROOT / ".venv" / "bin" / "twin")
SUITE_PYTHON = "/root/.pyenv/versions/3.11.7/bin/python3.11"
TESTS = "test_os test_posix test_shutil test_pathlib test_tempfile test_glob test_fileio"
# regrtest's line for a test file whose cases never reached the report (failed to load, crashed, timed out)
FILE_FAILED = re.compile(r"\b(test_\w+) (failed \(uncaught exception\)|crashed[^\n]*|timed out[^\n]*|"
                         r"failed \(timeout[^\n]*)")
FILE_TIMEOUT_S = 600   # regrtest's per-test-file timeout: a hang in the mount is a failure, not a stuck bench


@dataclass
class Outcome:
    """One run of the suite: the counts, and each failing test case's id -> first line of its error."""

    passed: int = 0
    skipped: int = 0
    failed: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    crashed: list[str] = field(default_factory=list)   # test files that died, timed out or failed to load:
                                                       # their cases are not in the counts

    @property
    def total(self) -> int:
        return self.passed + self.skipped + len(self.failed)


def parse_junit(path: Path) -> Outcome:
    out = Outcome()
    for case in ET.parse(path).getroot().iter("testcase"):
        name = ".".join(x for x in (case.get("classname"), case.get("name")) if x).removeprefix("test.")
        bad = case.find("failure")
        bad = bad if bad is not None else case.find("error")
        if bad is not None:
            text = (bad.get("message") or bad.text or "").strip().splitlines()
            out.failed[name] = text[-1][:160] if text else ""
        elif case.find("skipped") is not None:
            out.skipped += 1
        else:
            out.passed += 1
    return out


def run_suite(place: Path, tests: str) -> Outcome:
    """The suite with its working directory and TMPDIR under `place` (made here)."""
    work, tmp, xml = place / "regrtest", place / "tmp", place.parent / f"{place.name}-junit.xml"
    tmp.mkdir(parents=True)
    env = os.environ | {"TMPDIR": str(tmp)}
    env.pop("PYTHONPATH", None)   # the suite's Python, not the twin's
    t0 = time.monotonic()
    # -j1: each test file in its own worker, so one that hangs or crashes costs only its own cases
    r = subprocess.run([SUITE_PYTHON, "-m", "test", "-j1", "--tempdir", str(work), "--junit-xml", str(xml),
                        "--timeout", str(FILE_TIMEOUT_S), *tests.split()], cwd=place, env=env,
                       capture_output=True, text=True, timeout=FILE_TIMEOUT_S * len(tests.split()) + 60)
    out = parse_junit(xml) if xml.exists() else Outcome()
    out.seconds = time.monotonic() - t0
    first = {name: why for name, why in reversed(FILE_FAILED.findall(r.stdout))}   # regrtest may say it twice
    out.crashed = [f"{name} {why}" for name, why in reversed(first.items())]
    return out


def twin(*args: str, run: Path) -> None:
    subprocess.run([TWIN, *args, "--run-dir", str(run)], capture_output=True, text=True, check=True)


def run(tests: str = TESTS) -> tuple[Outcome, Outcome]:
    """(local disk, Lustre mount), run one after the other in the same bench run."""
    os.environ.setdefault("TWIN_LUSTRE_NVME_SCALE", "0")
    base = Path(tempfile.mkdtemp(prefix="lustre-posix-bench-", dir="/tmp"))   # /tmp: the root disk (ext4 here)
    run_dir, mnt = base / "run", base / "mnt"
    try:
        local = run_suite(base / "local", tests)
        twin("up", "rack", "--lustre", run=run_dir)
        twin("lustre", "mount", str(mnt), run=run_dir)
        lustre = run_suite(mnt / "suite", tests)
        return local, lustre
    finally:
        subprocess.run([TWIN, "lustre", "umount", str(mnt), "--run-dir", str(run_dir)], capture_output=True)
        subprocess.run([TWIN, "down", "--run-dir", str(run_dir)], capture_output=True)
        shutil.rmtree(base, ignore_errors=True)


def summary(o: Outcome) -> str:
    rate = o.passed / (o.passed + len(o.failed)) if o.passed + len(o.failed) else 0.0
    lost = f"; not counted: {', '.join(o.crashed)}" if o.crashed else ""
    return (f"{o.passed} passed, {len(o.failed)} failed, {o.skipped} skipped of {o.total} "
            f"({rate:.1%} of those run pass; {o.seconds:.0f} s){lost}")


def rows(local: Outcome, lustre: Outcome) -> list[tuple[str, str, str, bool]]:
    """(name, value, target, ok) rows for bench/__main__.py."""
    only_mount = sorted(set(lustre.failed) - set(local.failed))
    return [("CPython fs tests, local disk", summary(local), "reference", True),
            ("CPython fs tests, Lustre mount", summary(lustre), "as local",
             not only_mount and not lustre.crashed and lustre.passed >= local.passed)]


def main() -> int:
    a = parse_options(__doc__, tests=TESTS, show=40)
    local, lustre = run(a.tests)
    print(f"CPython {a.tests} (load average {os.getloadavg()[0]:.1f})")
    for name, value, target, ok in rows(local, lustre):
        print(f"  {name:<32} {value}  target {target} {'ok' if ok else 'MISSED'}")
    only_mount = sorted(set(lustre.failed) - set(local.failed))
    print(f"failing in the mount only: {len(only_mount)}")
    for name in only_mount[: a.show]:
        print(f"  {name}: {lustre.failed[name]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
