"""Lustre through the FUSE mount vs the local disk: 1 GiB sequential write and read with stripe
count 4 (dd bs=4M, conv=fsync for the write, caches dropped before each read), and `ls -l` of a
10,000-file directory. Starts its own twin (`rack --lustre`, NVMe time model off: the real stack is
measured), prints figures and ratios, stops the twin.

    .venv/bin/python -m bench.lustre_fuse [--size-mib 1024] [--files 10000]

Targets (issue 6): read >= 30 % and write >= 20 % of local disk; `ls -l` of 10,000 files <= 2 s.
Needs root (FUSE, drop_caches).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TWIN = str(ROOT / ".venv" / "bin" / "twin")


def drop_caches() -> None:
    subprocess.run(["sync"], check=True)
    try:
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
    except OSError:
        print("  (cannot drop caches: not root; reads may come from the page cache)")


def dd(args: list[str]) -> float:
    """Bytes/s dd reports."""
    r = subprocess.run(["dd", *args], capture_output=True, text=True, check=True)
    m = re.search(r"(\d+) bytes .* copied, ([\d.]+) s", r.stderr)
    return int(m[1]) / float(m[2])


def seq(path: Path, mib: int) -> tuple[float, float]:
    w = dd(["if=/dev/zero", f"of={path}", "bs=4M", f"count={mib // 4}", "conv=fsync"])
    drop_caches()
    r = dd([f"if={path}", "of=/dev/null", "bs=4M"])
    return w, r


def twin(*args: str, run: Path) -> str:
    return subprocess.run([TWIN, *args, "--run-dir", str(run)], capture_output=True, text=True, check=True).stdout


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mib", type=int, default=1024)
    ap.add_argument("--files", type=int, default=10_000)
    ap.add_argument("--topology", default="rack")
    a = ap.parse_args()
    os.environ.setdefault("TWIN_LUSTRE_NVME_SCALE", "0")
    work = Path(tempfile.mkdtemp(prefix="lustre-bench-", dir=str(ROOT)))
    run, mnt, local = work / "run", work / "mnt", work / "local"
    local.mkdir()
    try:
        lw, lr = seq(local / "f", a.size_mib)
        (local / "f").unlink()
        subprocess.run([TWIN, "up", a.topology, "--lustre", "--run-dir", str(run)], check=True,
                       capture_output=True)
        twin("lustre", "mount", str(mnt), run=run)
        twin("lustre", "lfs", "setstripe", "-c", "4", str(mnt / "f"), run=run)
        tw, tr = seq(mnt / "f", a.size_mib)
        d = mnt / "many"
        d.mkdir()
        t0 = time.monotonic()
        for i in range(a.files):
            (d / f"f{i:05d}").touch()
        create = time.monotonic() - t0
        time.sleep(1.2)   # past the attribute cache, so the listing asks the MDS
        t0 = time.monotonic()
        out = subprocess.run(["ls", "-l", str(d)], capture_output=True, text=True, check=True).stdout
        ls = time.monotonic() - t0
        assert out.count("\n") >= a.files
        M = 1024 * 1024
        print(f"lustre FUSE bench ({a.topology}, stripe count 4, {a.size_mib} MiB, NVMe model off)")
        print(f"  seq write  local {lw / M:8.1f} MiB/s  twin {tw / M:8.1f} MiB/s  ratio {tw / lw:6.1%}"
              "  (target >= 20%)")
        print(f"  seq read   local {lr / M:8.1f} MiB/s  twin {tr / M:8.1f} MiB/s  ratio {tr / lr:6.1%}"
              "  (target >= 30%)")
        print(f"  ls -l of {a.files} files: {ls:.2f} s (target <= 2 s); creating them took {create:.1f} s")
        return 0
    finally:
        subprocess.run([TWIN, "lustre", "umount", str(mnt), "--run-dir", str(run)], capture_output=True)
        subprocess.run([TWIN, "down", "--run-dir", str(run)], capture_output=True)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
