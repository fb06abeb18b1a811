"""RBD on the twin's Ceph daemons (`twin up mini --ceph`): images on the replicated SSD pool (size 3,
min_size 2, the 3 SSD OSDs of ceph01..03) through the monitor's CephRbd service; a checkpoint
written at several offsets reads back intact, also with an OSD of its PG killed (-9) or stopped;
snapshots, rollback, clones and rbd's refusals through `twin ceph rbd`.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Iterator
from typing import Any

import pytest
from typer.testing import CliRunner

from clustertwin.v1 import ceph_pb2 as pb
from emulator.cli.main import app
from emulator.health import SERVING, check_all
from services.ceph.sdk import CephAdmin, RbdClient
from tests.ceph.helpers import all_clean, ceph_twin, osd_fault, wait_for

MIB = 1 << 20


@pytest.fixture(scope="module")
def twin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CephAdmin]:
    with ceph_twin(tmp_path_factory, "rbd") as admin:
        yield admin


def rbd(admin: CephAdmin, *args: str) -> Any:
    return CliRunner().invoke(app, ["ceph", "rbd", *args, "--run-dir", str(admin.run.path)])


def test_cli_create_ls_info_resize(twin: CephAdmin) -> None:
    r = rbd(twin, "create", "rbd/vol", "--size", "10G")
    assert r.exit_code == 0 and r.output == "", r.output
    assert rbd(twin, "ls", "rbd").output == "vol\n"
    info = rbd(twin, "info", "rbd/vol").output
    lines = info.splitlines()
    assert lines[0] == "rbd image 'vol':"
    assert lines[1] == "\tsize 10 GiB in 2560 objects" and lines[2] == "\torder 22 (4 MiB objects)"
    assert "\tblock_name_prefix: rbd_data." in info and "\tformat: 2" in info
    r = rbd(twin, "resize", "rbd/vol", "--size", "20G")
    assert r.output == "Resizing image: 100% complete...done.\n"
    assert "\tsize 20 GiB in 5120 objects" in rbd(twin, "info", "vol").output
    r = rbd(twin, "resize", "vol", "--size", "1G")
    assert r.exit_code == 2 and "--allow-shrink" in r.output
    r = rbd(twin, "create", "vol", "--size", "1G")
    assert r.exit_code == 2 and "rbd: " in r.output and "File exists" in r.output
    r = rbd(twin, "create", "default.rgw.buckets.data/x", "--size", "1G")
    assert r.exit_code == 2 and "erasure-coded" in r.output
    r = rbd(twin, "info", "nope")
    assert r.exit_code == 2 and "No such file or directory" in r.output
    assert rbd(twin, "rm", "vol").output == "Removing image: 100% complete...done.\n"
    assert rbd(twin, "ls").output == ""


def test_checkpoint_survives_osd_kill_and_stop(twin: CephAdmin) -> None:
    c = RbdClient(twin.mon_address)
    c.create("rbd", "ckpt", 1 << 30)
    info = c.call("Info", pb.CephRbdInfoRequest(pool="rbd", name="ckpt")).image
    ckpt = os.urandom(64 * MIB)
    pieces = [(0, 0, 16 * MIB), (300 * MIB + 123, 16 * MIB, 16 * MIB),
              (700 * MIB - 4097, 32 * MIB, 24 * MIB), ((1 << 30) - 8 * MIB, 56 * MIB, 8 * MIB)]
    for off, start, n in pieces:
        c.write("rbd", "ckpt", off, ckpt[start:start + n])
    for off, start, n in pieces:
        assert c.read("rbd", "ckpt", off, n) == ckpt[start:start + n]
    assert c.read("rbd", "ckpt", 100 * MIB, 4096) == bytes(4096)    # sparse
    objs = [o for o in twin.call("ListObjects", pb.CephMonListObjectsRequest(pool="rbd", prefix=f"rbd_data.{info.id}."))
            .objects]
    assert len(objs) == 4 + 5 + 7 + 2 and all(o.size <= 4 * MIB for o in objs)
    pg = twin.call("Pgs", pb.CephMonPgsRequest(pool="rbd", object=objs[0].name)).pgs[0]
    assert len(pg.acting) == 3 and pg.state == "active+clean"

    # kill -9 one OSD of the PG: I/O goes on (size 3, min_size 2), the supervisor restarts it.
    victim = pg.acting[0]
    name = f"osd.{victim}"
    old = twin.kill(name)
    c.write("rbd", "ckpt", 0, ckpt[:16 * MIB][::-1])
    assert c.read("rbd", "ckpt", 0, 16 * MIB) == ckpt[:16 * MIB][::-1]
    c.write("rbd", "ckpt", 0, ckpt[:16 * MIB])
    wait_for("the OSD restarted", lambda: twin.run.read(twin.run.daemons)["daemons"][name]["pid"] not in (0, old),
             timeout=10)
    addr = twin.daemons[name].grpc
    wait_for("the OSD serving", lambda: check_all([addr])[addr] == SERVING, timeout=10)
    wait_for("active+clean", lambda: all_clean(twin), timeout=30)
    for off, start, n in pieces:
        assert c.read("rbd", "ckpt", off, n) == ckpt[start:start + n]

    # Stop one OSD of the PG (stays down): degraded, the checkpoint still reads and writes.
    victim = pg.acting[1]
    osd_fault(twin, victim, stopped=True)
    try:
        wait_for("degraded", lambda: twin.call("Pgs", pb.CephMonPgsRequest(pg=pg.pgid)).pgs[0].state
                 == "active+undersized+degraded", timeout=10)
        whole = hashlib.sha256(b"".join(c.read("rbd", "ckpt", off, n) for off, _, n in pieces)).digest()
        assert whole == hashlib.sha256(ckpt).digest()
        c.write("rbd", "ckpt", 500 * MIB, b"during degradation")
    finally:
        osd_fault(twin, victim, stopped=False)
    wait_for("active+clean", lambda: all_clean(twin), timeout=30)
    assert c.read("rbd", "ckpt", 500 * MIB, 18) == b"during degradation"
    assert twin.call("Scrub", pb.CephMonScrubRequest(pg=pg.pgid)).errors == []


def test_snapshots_clone_and_refusals_through_the_cli(twin: CephAdmin, tmp_path: Any) -> None:
    c = RbdClient(twin.mon_address)
    c.create("rbd", "golden", 16 * MIB)
    base = os.urandom(16 * MIB)
    c.write("rbd", "golden", 0, base)
    assert rbd(twin, "snap", "create", "rbd/golden@v1").output == "Creating snap: 100% complete...done.\n"
    c.write("rbd", "golden", 4 * MIB, b"\xff" * MIB)
    ls = rbd(twin, "snap", "ls", "rbd/golden").output.splitlines()
    assert ls[0].split() == ["SNAPID", "NAME", "SIZE", "PROTECTED", "TIMESTAMP"]
    assert ls[1].split()[:4] == ["1", "v1", "16", "MiB"]
    r = rbd(twin, "clone", "rbd/golden@v1", "rbd/child")
    assert r.exit_code == 2 and "must be protected" in r.output
    assert rbd(twin, "snap", "protect", "rbd/golden@v1").exit_code == 0
    assert "yes" in rbd(twin, "snap", "ls", "golden").output
    assert rbd(twin, "clone", "rbd/golden@v1", "rbd/child").exit_code == 0
    info = rbd(twin, "info", "child").output
    assert "\tparent: rbd/golden@v1" in info and "\toverlap: 16 MiB" in info
    assert c.read("rbd", "child", 0, 16 * MIB) == base          # reads through to the parent snapshot
    c.write("rbd", "child", 8 * MIB + 5, b"child!")
    m = 8 * MIB
    assert c.read("rbd", "child", m, 16) == base[m: m + 5] + b"child!" + base[m + 11: m + 16]
    assert c.read("rbd", "golden", 8 * MIB, 16) == base[8 * MIB: 8 * MIB + 16]   # the parent is untouched
    r = rbd(twin, "rm", "golden")
    assert r.exit_code == 2 and "rbd: image has snapshots with linked clones" in r.output
    r = rbd(twin, "snap", "rm", "golden@v1")
    assert r.exit_code == 2 and "protected from removal" in r.output
    r = rbd(twin, "snap", "unprotect", "golden@v1")
    assert r.exit_code == 2 and "child" in r.output
    assert "golden@v1" in rbd(twin, "ls", "-l").output
    assert rbd(twin, "snap", "rollback", "golden@v1").output == "Rolling back to snapshot: 100% complete...done.\n"
    assert c.read("rbd", "golden", 0, 16 * MIB) == base
    out = tmp_path / "child.img"
    assert rbd(twin, "export", "child", str(out)).exit_code == 0
    assert out.stat().st_size == 16 * MIB and out.read_bytes()[8 * MIB + 5: 8 * MIB + 11] == b"child!"
    assert rbd(twin, "rm", "child").exit_code == 0
    assert rbd(twin, "snap", "unprotect", "golden@v1").exit_code == 0
    r = rbd(twin, "rm", "golden")
    assert r.exit_code == 2 and "rbd: image has snapshots - these must be deleted with 'rbd snap purge'" in r.output
    assert rbd(twin, "snap", "rm", "golden@v1").output == "Removing snap: 100% complete...done.\n"
    assert rbd(twin, "rm", "golden").exit_code == 0
    t0 = time.monotonic()
    while rbd(twin, "ls").output and time.monotonic() - t0 < 5:
        time.sleep(0.1)
    assert "golden" not in rbd(twin, "ls").output
