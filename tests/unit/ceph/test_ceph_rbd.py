"""The RBD model (services/ceph/rbd) over a Cluster model: images striped into 4 MiB RADOS objects
of the replicated pool, sparse reads, copy-on-write snapshots, rollback, clones of protected
snapshots reading through to the parent, and rbd's refusals."""

from __future__ import annotations

import os

import pytest

from services.ceph.errors import CephError
from services.ceph.rbd.cluster_io import ClusterObjectIo
from services.ceph.rbd.image import Rbd, data_name, parse_spec
from tests.unit.ceph.helpers import ec_cluster

MIB = 1 << 20


@pytest.fixture
def rbd() -> Rbd:
    cluster, _ = ec_cluster(hosts=12, pg_num=8, rbd=True)
    return Rbd(ClusterObjectIo(cluster))


def test_create_list_info_and_sparse_reads(rbd: Rbd) -> None:
    rbd.create("rbd", "vol", 10 << 30)
    assert rbd.list("rbd") == ["vol"]
    info = rbd.info("rbd", "vol")
    assert info["size"] == 10 << 30 and info["objects"] == 2560 and info["order"] == 22
    assert rbd.read("rbd", "vol", 5 << 30, 4096) == bytes(4096)      # never written: zeros
    assert rbd.io.list("rbd", f"rbd_data.{info['id']}.") == []       # and no object for it
    with pytest.raises(CephError, match="File exists"):
        rbd.create("rbd", "vol", 1)
    with pytest.raises(CephError, match="erasure-coded"):
        rbd.create("default.rgw.buckets.data", "x", 1)
    with pytest.raises(CephError, match="No such file"):
        rbd.info("rbd", "nope")


def test_write_read_across_objects_lands_in_rbd_data_objects(rbd: Rbd) -> None:
    img = rbd.create("rbd", "ckpt", 64 * MIB)
    blob = os.urandom(9 * MIB)
    rbd.write("rbd", "ckpt", 3 * MIB + 17, blob)   # objects 0..3, unaligned at both ends
    assert rbd.read("rbd", "ckpt", 3 * MIB + 17, len(blob)) == blob
    assert rbd.read("rbd", "ckpt", 0, 3 * MIB + 17) == bytes(3 * MIB + 17)
    names = rbd.io.list("rbd", f"rbd_data.{img.id}.")
    assert names == [data_name(img.id, i) for i in range(4)]
    with pytest.raises(CephError, match="beyond the end"):
        rbd.write("rbd", "ckpt", 64 * MIB - 1, b"xy")


def snapshotted(rbd: Rbd, name: str, size: int, snap: str) -> bytes:
    """A new image `name` in pool rbd filled with `size` random bytes, and its snapshot `snap`; the bytes."""
    rbd.create("rbd", name, size)
    data = os.urandom(size)
    rbd.write("rbd", name, 0, data)
    rbd.snap_create("rbd", name, snap)
    return data


def test_snapshots_copy_on_write_rollback_and_remove(rbd: Rbd) -> None:
    a, b = snapshotted(rbd, "v", 16 * MIB, "s1"), os.urandom(5 * MIB)
    rbd.write("rbd", "v", 2 * MIB, b)
    rbd.snap_create("rbd", "v", "s2")
    rbd.write("rbd", "v", 0, bytes(MIB))
    after_b = a[:2 * MIB] + b + a[7 * MIB:]
    assert rbd.read("rbd", "v", 0, 16 * MIB, snap="s1") == a
    assert rbd.read("rbd", "v", 0, 16 * MIB, snap="s2") == after_b
    assert rbd.read("rbd", "v", 0, 16 * MIB) == bytes(MIB) + after_b[MIB:]
    assert [s["name"] for s in rbd.snap_list("rbd", "v")] == ["s1", "s2"]
    rbd.snap_rollback("rbd", "v", "s1")
    assert rbd.read("rbd", "v", 0, 16 * MIB) == a
    assert rbd.read("rbd", "v", 0, 16 * MIB, snap="s2") == after_b   # other snapshots untouched
    rbd.snap_remove("rbd", "v", "s1")
    assert rbd.read("rbd", "v", 0, 16 * MIB, snap="s2") == after_b
    with pytest.raises(CephError, match="has snapshots"):
        rbd.remove("rbd", "v")
    rbd.snap_remove("rbd", "v", "s2")
    img = rbd.open("rbd", "v")
    assert not img.h["clones"] and not [n for n in rbd.io.list("rbd", f"rbd_data.{img.id}.") if ".snap." in n]
    rbd.remove("rbd", "v")
    assert rbd.list("rbd") == [] and rbd.io.list("rbd", "rbd_data.") == []


def test_resize_grow_and_shrink_keeps_snapshot(rbd: Rbd) -> None:
    data = snapshotted(rbd, "r", 8 * MIB, "before")
    with pytest.raises(CephError, match="allow-shrink"):
        rbd.resize("rbd", "r", 3 * MIB)
    rbd.resize("rbd", "r", 3 * MIB, allow_shrink=True)
    assert rbd.info("rbd", "r")["size"] == 3 * MIB
    rbd.resize("rbd", "r", 12 * MIB)
    assert rbd.read("rbd", "r", 0, 12 * MIB) == data[:3 * MIB] + bytes(9 * MIB)
    assert rbd.read("rbd", "r", 0, 8 * MIB, snap="before") == data


def test_clone_reads_parent_until_written_and_blocks_unprotect_and_remove(rbd: Rbd) -> None:
    base = snapshotted(rbd, "golden", 12 * MIB, "v1")
    with pytest.raises(CephError, match="must be protected"):
        rbd.clone("rbd", "golden", "v1", "rbd", "child")
    rbd.snap_protect("rbd", "golden", "v1")
    child = rbd.clone("rbd", "golden", "v1", "rbd", "child")
    assert child.parent and child.parent["overlap"] == 12 * MIB
    assert rbd.read("rbd", "child", 0, 12 * MIB) == base                          # all from the parent
    assert rbd.io.list("rbd", f"rbd_data.{child.id}.") == []
    rbd.write("rbd", "child", 5 * MIB, b"X" * 100)                                  # copy-up of object 1
    assert rbd.io.list("rbd", f"rbd_data.{child.id}.") == [data_name(child.id, 1)]
    want = base[:5 * MIB] + b"X" * 100 + base[5 * MIB + 100:]
    assert rbd.read("rbd", "child", 0, 12 * MIB) == want
    rbd.write("rbd", "golden", 0, bytes(12 * MIB))                                  # parent head changes
    assert rbd.read("rbd", "child", 0, 12 * MIB) == want                          # child sees the snapshot
    with pytest.raises(CephError, match="child"):
        rbd.snap_unprotect("rbd", "golden", "v1")
    with pytest.raises(CephError, match="protected from removal"):
        rbd.snap_remove("rbd", "golden", "v1")
    with pytest.raises(CephError, match="linked clones"):
        rbd.remove("rbd", "golden")
    rbd.remove("rbd", "child")
    rbd.snap_unprotect("rbd", "golden", "v1")
    rbd.snap_remove("rbd", "golden", "v1")
    rbd.remove("rbd", "golden")
    assert rbd.list("rbd") == []


def test_parse_spec() -> None:
    assert parse_spec("rbd/img@s") == ("rbd", "img", "s")
    assert parse_spec("img") == ("rbd", "img", "")
    with pytest.raises(CephError):
        parse_spec("pool/")
