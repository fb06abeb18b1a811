"""The OSD's log-structured chunk store (services/ceph/osd/logstore.py): what a restart finds, a write
cut short by a kill, bit rot in place, and compaction giving space back without losing a chunk."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from services.ceph.errors import CephError
from services.ceph.osd.logstore import LogChunkStore


def test_puts_overwrites_and_removals_survive_a_restart(tmp_path: Path) -> None:
    s = LogChunkStore(tmp_path)
    s.put(("5.1", "obj/a\0v1", 0), b"first")
    s.put(("5.1", "obj/a\0v1", 0), b"second, longer")
    s.put(("5.2", "b", 3), b"bee")
    s.put(("5.2", "gone", 1), b"x" * 100)
    assert s.delete(("5.2", "gone", 1)) and not s.delete(("5.2", "gone", 1))
    s.close()
    r = LogChunkStore(tmp_path)
    assert r.get(("5.1", "obj/a\0v1", 0)) == b"second, longer"
    assert r.get(("5.2", "b", 3)) == b"bee" and r.get(("5.2", "gone", 1)) is None
    assert r.keys("5.2") == [(("5.2", "b", 3), 3)]
    assert r.used_bytes() == len(b"second, longer") + 3 and len(r) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["current"]


def test_a_write_cut_short_is_removed_at_start_up(tmp_path: Path) -> None:
    s = LogChunkStore(tmp_path)
    s.put(("5.1", "kept", 0), b"k" * 1000)
    s.put(("5.1", "torn", 0), b"t" * 1000)
    s.close()
    seg = next((tmp_path / "current").glob("seg.*"))
    whole = seg.stat().st_size
    os.truncate(seg, whole - 10)   # the second record's last bytes never reached the file
    r = LogChunkStore(tmp_path)
    assert r.get(("5.1", "kept", 0)) == b"k" * 1000 and r.get(("5.1", "torn", 0)) is None
    r.put(("5.1", "after", 0), b"a")   # appends where the torn record was
    r.close()
    assert LogChunkStore(tmp_path).get(("5.1", "after", 0)) == b"a"


def test_corrupt_flips_a_byte_in_place_and_it_stays_flipped(tmp_path: Path) -> None:
    s = LogChunkStore(tmp_path)
    s.put(("5.1", "rot", 2), b"\x00" * 8)
    assert s.corrupt(("5.1", "rot", 2), 11) == 8
    assert s.get(("5.1", "rot", 2)) == b"\x00\x00\x00\xff\x00\x00\x00\x00"
    s.close()
    assert LogChunkStore(tmp_path).get(("5.1", "rot", 2)) == b"\x00\x00\x00\xff\x00\x00\x00\x00"
    with pytest.raises(CephError) as e:
        LogChunkStore(tmp_path).corrupt(("5.1", "none", 0), 0)
    assert e.value.code == "NOT_FOUND"


def test_compaction_reclaims_overwritten_chunks_and_keeps_the_live_ones(tmp_path: Path) -> None:
    s = LogChunkStore(tmp_path, segment_bytes=64 << 10)
    for i in range(2000):   # 100 keys overwritten 20 times: about 2 MiB written, 50 KiB live
        s.put(("5.1", f"k{i % 100}", 0), bytes([i % 256]) * 500)
    for i in range(50):
        s.delete(("5.1", f"k{i}", 0))
    s.put(("5.1", "last", 0), b"z" * 500)
    on_disk = sum(p.stat().st_size for p in (tmp_path / "current").iterdir())
    assert on_disk < 400 << 10, on_disk
    s.close()
    r = LogChunkStore(tmp_path, segment_bytes=64 << 10)
    assert len(r) == 51
    for i in range(50, 100):
        assert r.get(("5.1", f"k{i}", 0)) == bytes([(1900 + i) % 256]) * 500
    assert r.get(("5.1", "k3", 0)) is None and r.get(("5.1", "last", 0)) == b"z" * 500


def test_bad_keys_are_refused(tmp_path: Path) -> None:
    s = LogChunkStore(tmp_path)
    for key in (("", "x", 0), ("../5.1", "x", 0), ("5.1", "x", -1)):
        with pytest.raises(CephError) as e:
            s.put(key, b"data")
        assert e.value.code == "INVALID_ARGUMENT"
    assert len(s) == 0
