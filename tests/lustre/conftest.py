"""What the Lustre tests share: the `twin` command, a data pattern, the root/FUSE skip, and a twin with
its filesystem mounted (`lustre_mount`), torn down after the module and checked to leave no mount."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from emulator.manifest import Manifest
from emulator.rundir import RunDir
from services.lustre.client.core import LustreClient
from services.lustre.client.mount import is_mounted

ROOT = Path(__file__).resolve().parents[2]
TWIN = str(ROOT / ".venv" / "bin" / "twin")
MiB = 1024 * 1024
ENV = os.environ | {"TWIN_LUSTRE_NVME_SCALE": "0", "COLUMNS": "200"}

FUSE_MISSING = os.geteuid() != 0 or not Path("/dev/fuse").exists() or not shutil.which("fusermount3")
needs_fuse = pytest.mark.skipif(FUSE_MISSING, reason="needs root, /dev/fuse and fusermount3")


def twin_cli(*args: str, run: Path, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess:
    """`twin ARGS --run-dir RUN`; with check, a non-zero exit fails with its output."""
    r = subprocess.run([TWIN, *args, "--run-dir", str(run)], capture_output=True, text=True, env=ENV, timeout=timeout)
    if check and r.returncode != 0:
        raise AssertionError(f"twin {' '.join(args)} -> {r.returncode}\n{r.stdout}\n{r.stderr}")
    return r


def pattern(n: int, seed: int) -> bytes:
    """n bytes, different for every seed and not repeating within a 64 KiB block."""
    block = hashlib.sha256(str(seed).encode()).digest() * 2048   # 64 KiB
    return (block * (n // len(block) + 1))[:n]


@dataclass
class LustreMount:
    run: Path
    mnt: Path
    manifest: Manifest

    def cli(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return twin_cli(*args, run=self.run, check=check)


def lustre_mount(base: Path, *up_args: str) -> Iterator[LustreMount]:
    """`twin up UP_ARGS --lustre`, `twin lustre mount`; afterwards umount, `twin down`, and no mount left."""
    run, mnt = base / "run", base / "mnt"
    twin_cli("up", *up_args, "--lustre", run=run)
    try:
        twin_cli("lustre", "mount", str(mnt), run=run)
        yield LustreMount(run, mnt, RunDir(run).load_manifest())
    finally:
        twin_cli("lustre", "umount", str(mnt), run=run, check=False)
        twin_cli("down", run=run, check=False)
    assert not is_mounted(str(mnt))


def with_second_mount(m: LustreMount, mnt2: Path) -> Iterator[tuple[LustreMount, Path, Path, LustreClient]]:
    """A second mount of the same file system at `mnt2` (another client) and a direct MDS client, for
    tests that watch one mount from the other; afterwards both go and `mnt2` is no longer mounted."""
    m.cli("lustre", "mount", str(mnt2))
    client = LustreClient.from_manifest(m.manifest, failover_timeout=30.0)
    try:
        yield m, m.mnt, mnt2, client
    finally:
        client.close()
        m.cli("lustre", "umount", str(mnt2), check=False)
        assert not is_mounted(str(mnt2))


@pytest.fixture(scope="module")
def rack_lustre(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LustreMount]:
    """`twin up rack --lustre` on the loopback network (an MDS pair, 2 OSS in a failover pair, 4 OSTs),
    mounted; one per test module."""
    if FUSE_MISSING:
        pytest.skip("needs root, /dev/fuse and fusermount3")
    yield from lustre_mount(tmp_path_factory.mktemp("lustre-rack"), "rack")
