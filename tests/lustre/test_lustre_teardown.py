"""`twin down` with a Lustre mount that was written to (issue 13, case 2): it returns whatever state the
client and its servers are in, with the mount gone and no process of the twin left. The clients go
down before their servers, and nothing of the teardown waits on a client that does not answer.

The time each `twin down` took is printed (`-s`), not asserted: bench/ holds the wall-clock bounds."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from emulator.procutil import pid_alive
from emulator.rundir import RunDir
from services.lustre.client.mount import abort_connection, fuse_device, is_mounted
from tests.conftest import assert_nothing_left, twin_pids
from tests.lustre.conftest import FUSE_MISSING, pattern, twin_cli

pytestmark = pytest.mark.skipif(FUSE_MISSING, reason="needs root, /dev/fuse and fusermount3")
MiB = 1024 * 1024
DOWN_HANG_GUARD_S = 150   # only so that a hung `twin down` fails the test instead of the whole run


@dataclass
class Mounted:
    run: Path
    mnt: Path
    client: int          # the FUSE client process's pid
    pids: list[int]      # the twin's supervisor, broker and daemons


@pytest.fixture
def mounted(tmp_path: Path) -> Iterator[Mounted]:
    """`twin up mini --lustre`, `twin lustre mount`, 8 MiB written and fsync'ed through the mount."""
    run, mnt = tmp_path / "run", tmp_path / "mnt"
    twin_cli("up", "mini", "--lustre", run=run)
    try:
        twin_cli("lustre", "mount", str(mnt), run=run)
        with open(mnt / "written", "wb") as f:
            f.write(pattern(8 * MiB, 13))
            os.fsync(f.fileno())
        rec = json.loads(next((run / "mounts").glob("lustre-*.json")).read_text())
        yield Mounted(run, mnt, rec["pid"], twin_pids(RunDir(run)))
    finally:
        twin_cli("down", run=run, check=False, timeout=DOWN_HANG_GUARD_S)


def down_and_check(m: Mounted, what: str) -> None:
    began = time.monotonic()
    r = twin_cli("down", run=m.run, timeout=DOWN_HANG_GUARD_S)
    print(f"\n`twin down` {what}: {time.monotonic() - began:.1f}s ({r.stdout.strip()})")
    assert not is_mounted(str(m.mnt)) and str(m.mnt) not in Path("/proc/mounts").read_text()
    assert not pid_alive(m.client), "the Lustre client process was left behind"
    assert_nothing_left(RunDir(m.run), m.pids)
    assert not list((m.run / "mounts").glob("lustre-*.json"))


def test_down_with_a_written_mount(mounted: Mounted) -> None:
    down_and_check(mounted, "with a written mount")


def test_down_after_the_servers_were_killed(mounted: Mounted) -> None:
    # kill -9 of the supervisor: the MDS and OSS die with it, the client (not its child) stays mounted.
    os.kill(int((mounted.run / "supervisor.pid").read_text()), signal.SIGKILL)
    wait = time.monotonic() + 15
    while any(pid_alive(p) for p in mounted.pids) and time.monotonic() < wait:
        time.sleep(0.1)
    assert is_mounted(str(mounted.mnt)) and pid_alive(mounted.client)
    down_and_check(mounted, "after the servers were killed -9")


def test_down_with_a_hung_client_and_a_process_waiting_on_it(mounted: Mounted) -> None:
    os.kill(mounted.client, signal.SIGSTOP)   # a client that does not answer
    reader = subprocess.Popen(["cat", str(mounted.mnt / "written")], stdout=subprocess.DEVNULL)
    time.sleep(0.5)
    assert reader.poll() is None, "the read should wait on the stopped client"
    down_and_check(mounted, "with a stopped client and a reader waiting on it")
    reader.wait(DOWN_HANG_GUARD_S)   # it is not left waiting on a client that is gone


def test_aborting_the_connection_fails_the_waiting_requests(mounted: Mounted) -> None:
    device = fuse_device(str(mounted.mnt))
    assert device and device.startswith("0:")
    os.kill(mounted.client, signal.SIGSTOP)
    reader = subprocess.Popen(["cat", str(mounted.mnt / "written")], stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
    time.sleep(0.5)
    assert reader.poll() is None, "the read should wait on the stopped client"
    assert abort_connection(device)
    assert reader.wait(DOWN_HANG_GUARD_S) != 0
    err = reader.stderr.read()
    assert "not connected" in err or "connection abort" in err, err
    down_and_check(mounted, "after the connection was aborted")


WRITER = """
import os, sys
fd = os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY, 0o644)
for _ in range(40_000):
    os.write(fd, b"w" * 100)
print("written", flush=True)
sys.stdin.readline()
try:
    os.close(fd)
    print("closed 0")
except OSError as e:
    print("closed", e.errno)
"""


def test_down_while_the_kernel_holds_a_writers_pages(mounted: Mounted) -> None:
    """A writer's 4 MB in the kernel's page cache (the mount's FUSE_WRITEBACK_CACHE), its file still open,
    at `twin down`: the teardown does not wait on those pages, and the writer's close answers afterwards,
    with the error of a connection that is gone, instead of hanging in the kernel."""
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(mounted.mnt / "held")], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline().strip() == "written"
        down_and_check(mounted, "while the kernel held a writer's unwritten pages")
        out, _ = writer.communicate("\n", timeout=DOWN_HANG_GUARD_S)
    finally:
        writer.kill()
    code = int(out.split()[-1])
    assert code in (errno.ENOTCONN, errno.EIO), out
