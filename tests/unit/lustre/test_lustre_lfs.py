"""`lfs getstripe`, `df` (-h, -i, inactive OSTs), `osts`, `mdts` and `find` output."""

from __future__ import annotations

import pytest

from services.lustre import find as lfind
from services.lustre import lfs
from services.lustre.errors import LustreError
from services.lustre.layout import GiB, Layout, MiB, StripeObject, StripeSpec
from services.lustre.ost import MdtState, OstState, TiB
from tests.unit.lustre.helpers import make_ns

# FIDELITY.md §5, verbatim (tabs included).
SAMPLE = """/mnt/lustre/afile
lmm_stripe_count:  1
lmm_stripe_size:   4194304
lmm_pattern:       raid0
lmm_layout_gen:    0
lmm_stripe_offset: 1
\tobdidx\t\t objid\t\t objid\t\t group
\t     1\t             2\t          0x2\t   0x240000400
"""


def test_getstripe_reproduces_the_fidelity_sample_exactly() -> None:
    lay = Layout(4 * MiB, (StripeObject(1, 2, 0x240000400),))
    assert lfs.getstripe("/mnt/lustre/afile", lay).splitlines() == SAMPLE.splitlines()


def test_getstripe_of_a_namespace_file_has_the_sample_structure() -> None:
    ns = make_ns(4)
    f = ns.create("/ckpt", 1.0, spec=StripeSpec(3, MiB, 1))
    out = lfs.getstripe("/mnt/lustre/ckpt", f.layout, ost_marker=2).splitlines()  # type: ignore[arg-type]
    sample = SAMPLE.splitlines()
    assert out[0] == "/mnt/lustre/ckpt"
    for got, want in zip(out[1:6], sample[1:6], strict=True):  # same keys, values in the same column
        key, value = got.split(":", 1)
        assert key == want.split(":", 1)[0] and len(got) - len(value.lstrip()) == len(want) - len(
            want.split(":", 1)[1].lstrip())
    assert out[6] == sample[6]
    assert out[1:6] == ["lmm_stripe_count:  3", "lmm_stripe_size:   1048576", "lmm_pattern:       raid0",
                        "lmm_layout_gen:    0", "lmm_stripe_offset: 1"]
    rows = out[7:]
    assert len(rows) == 3
    for row, ost in zip(rows, (1, 2, 3), strict=True):
        fields = row.removesuffix(" *").split("\t")
        assert [len(x) for x in fields] == [len(x) for x in sample[7].split("\t")]  # %6u %14llu %#13llx %#14llx
        assert int(fields[1]) == ost and int(fields[2]) == 2 and fields[3].strip() == "0x2"
    assert rows[1].endswith(" *") and not rows[0].endswith(" *")


def _targets() -> tuple[list[MdtState], list[OstState]]:
    mdt = MdtState(0, capacity_bytes=2 * TiB, used_bytes=20 * GiB, inodes_total=1000, inodes_used=10)
    osts = [OstState(i, "oss1", 4 * TiB, used_bytes=(i + 1) * TiB, inodes_total=500, inodes_used=100 + i)
            for i in range(4)]
    osts[3].active = False
    return [mdt], osts


def test_df_rows_inactive_and_summary() -> None:
    mdts, osts = _targets()
    lines = lfs.df("testfs", "/testfs", mdts, osts).splitlines()
    assert lines[0].split() == ["UUID", "1K-blocks", "Used", "Available", "Use%", "Mounted", "on"]
    assert lines[2].split() == ["testfs-OST0000_UUID", str(4 * TiB >> 10), str(TiB >> 10), str(3 * TiB >> 10),
                                "25%", "/testfs[OST:0]"]
    assert lines[5] == "OST0003             : inactive device"
    assert lines[6] == "" and lines[7].split()[0] == "filesystem_summary:"
    assert lines[7].split()[1:] == [str(12 * TiB >> 10), str(6 * TiB >> 10), str(6 * TiB >> 10), "50%", "/testfs"]


def test_df_h_units_match_the_fidelity_row() -> None:
    # ldiskfs keeps reserved blocks: used + available < size, as in the FIDELITY row
    ost = OstState(0, "oss1", int(3.6 * TiB), used_bytes=int(2.9 * TiB), reserved_bytes=int(3.6 * TiB)
                   - int(2.9 * TiB) - int(585.7 * GiB))
    row = lfs.df("testfs", "/testfs", [MdtState()], [ost], human=True).splitlines()[2]
    assert row.split() == ["testfs-OST0000_UUID", "3.6T", "2.9T", "585.7G", "84%", "/testfs[OST:0]"]
    # %-20s, then ' %11s' three times, ' %4s', ' ' before the mount point
    assert row.startswith("testfs-OST0000_UUID ") and len(row.split("/testfs")[0]) == 20 + 3 * 12 + 5 + 1
    assert lfs.cook(1023.0) == "1023" and lfs.cook(2048.0).strip() == "2.0K"
    assert lfs.cook(float(GiB)).strip() == "1024.0M"  # lfs divides only while the value exceeds 1024
    head = lfs.df("testfs", "/testfs", [MdtState()], [ost], human=True).splitlines()[0].split()
    assert head[1] == "bytes"


def test_df_i_counts_inodes_and_sums_mdts() -> None:
    mdts, osts = _targets()
    lines = lfs.df("testfs", "/testfs", mdts, osts, inodes=True).splitlines()
    assert lines[0].split()[:5] == ["UUID", "Inodes", "IUsed", "IFree", "IUse%"]
    assert lines[1].split() == ["testfs-MDT0000_UUID", "1000", "10", "990", "1%", "/testfs[MDT:0]"]
    assert lines[2].split() == ["testfs-OST0000_UUID", "500", "100", "400", "20%", "/testfs[OST:0]"]
    assert lines[-1] == "" and lines[-2].split() == ["filesystem_summary:", "1000", "10", "990", "1%", "/testfs"]


def test_df_marks_degraded_and_osts_mdts_listings() -> None:
    mdts, osts = _targets()
    osts[1].degraded = True
    assert lfs.df("testfs", "/testfs", mdts, osts).splitlines()[3].endswith("[OST:1] D")
    assert lfs.osts("testfs", osts) == ("OBDS:\n0: testfs-OST0000_UUID ACTIVE\n1: testfs-OST0001_UUID ACTIVE\n"
                                        "2: testfs-OST0002_UUID ACTIVE\n3: testfs-OST0003_UUID INACTIVE\n")
    assert lfs.mdts("testfs", mdts) == "MDTS:\n0: testfs-MDT0000_UUID ACTIVE\n"


def test_getstripe_dir_default() -> None:
    assert lfs.getstripe_dir("/mnt/lustre/d", StripeSpec(-1, MiB)).splitlines()[1] == (
        "stripe_count:  -1 stripe_size:   1048576 pattern:       raid0 stripe_offset: -1")


def _find(ns, **kw) -> list[str]:  # type: ignore[no-untyped-def]
    return lfind.find(ns, "/", lfind.FindQuery(**kw))


def test_find_filters() -> None:
    ns = make_ns(4)
    ns.mkdir("/data", 1.0)
    ns.create("/data/a.bin", 1.0, spec=StripeSpec(1, 0, 0))
    ns.create("/data/b.bin", 1.0, spec=StripeSpec(4))
    ns.create("/data/c.txt", 1.0, spec=StripeSpec(2, 0, 2))
    ns.create("/data/empty", 1.0)
    ns.set_size("/data/a.bin", 5 * MiB, 2.0)
    ns.set_size("/data/b.bin", 512 * 1024, 2.0)
    ns.set_size("/data/c.txt", MiB, 2.0)
    assert _find(ns, name="*.bin") == ["/data/a.bin", "/data/b.bin"]
    assert _find(ns, size=lfind.parse_size_filter("+1M")) == ["/data/a.bin"]
    assert _find(ns, size=lfind.parse_size_filter("-1M")) == ["/data/empty"]  # rounds up, as find does
    assert _find(ns, size=lfind.parse_size_filter("1M")) == ["/data/b.bin", "/data/c.txt"]
    assert _find(ns, size=lfind.parse_size_filter("-600k")) == ["/data/b.bin", "/data/empty"]
    assert _find(ns, stripe_count=lfind.parse_count_filter("+1")) == ["/data/b.bin", "/data/c.txt"]
    assert _find(ns, stripe_count=lfind.parse_count_filter(4)) == ["/data/b.bin"]
    assert _find(ns, ost=3) == ["/data/b.bin", "/data/c.txt"]
    assert _find(ns, type="d") == ["/", "/data"]
    assert lfind.render(_find(ns, name="c*"), "/mnt/lustre") == "/mnt/lustre/data/c.txt\n"
    with pytest.raises(LustreError):
        lfind.parse_size_filter("1X")
    with pytest.raises(LustreError):
        _find(ns, ost=9)
