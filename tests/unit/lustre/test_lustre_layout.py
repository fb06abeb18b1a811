"""setstripe rules, placement balance and avoidance, and RAID0 byte-range mapping."""

from __future__ import annotations

from collections import Counter

import pytest

from services.lustre.errors import LustreError
from services.lustre.layout import (
    DEFAULT_STRIPE_SIZE,
    Allocator,
    Layout,
    MiB,
    StripeObject,
    StripeSpec,
    parse_size,
    resolve,
    rr_order,
)
from tests.unit.lustre.helpers import make_ns, make_osts


@pytest.mark.parametrize(("count", "size", "index", "needle"), [
    (-2, 0, -1, "stripe count -2"),
    (2001, 0, -1, "maximum is 2000"),
    (1, "65537", -1, "multiple of 64 KiB"),
    (1, "100k", -1, "multiple of 64 KiB"),
    (1, "4G", -1, "less than 4 GiB"),
    (1, 0, -2, "stripe offset -2"),
    ("x", 0, -1, "bad stripe count"),
    (1, "1Q", -1, "bad stripe size"),
])
def test_setstripe_rejections_are_einval(count: object, size: object, index: object, needle: str) -> None:
    with pytest.raises(LustreError) as e:
        StripeSpec.parse(count, size, index)  # type: ignore[arg-type]
    assert e.value.name == "EINVAL" and needle in e.value.message


def test_unknown_ost_index_is_einval_and_changes_nothing() -> None:
    ns = make_ns(4)
    with pytest.raises(LustreError) as e:
        ns.create("/f", 1.0, spec=StripeSpec(1, 0, 9))
    assert e.value.name == "EINVAL" and "0..3" in e.value.message
    assert ns.readdir("/") == [] and ns.mdt.inodes_used == 1


def test_sizes_and_defaults() -> None:
    assert parse_size("1M") == MiB and parse_size("64k") == 65536 and parse_size("4194304") == 4 * MiB
    assert StripeSpec.parse(0, 0, -1) == StripeSpec()
    assert resolve(StripeSpec()) == StripeSpec(1, DEFAULT_STRIPE_SIZE, -1)  # count 0 = default 1, size 4 MiB
    assert StripeSpec.parse(1, 4 * 1024**3 - 65536, -1).size == 4 * 1024**3 - 65536  # largest valid size


def test_count_minus_one_uses_all_usable_osts_and_excess_is_capped() -> None:
    ns = make_ns(8)
    assert sorted(ns.create("/all", 1.0, spec=StripeSpec(-1)).layout.osts) == list(range(8))  # type: ignore[union-attr]
    ns.osts[5].active = False
    assert sorted(ns.create("/all2", 1.0, spec=StripeSpec(-1)).layout.osts) == [0, 1, 2, 3, 4, 6, 7]  # type: ignore[union-attr]
    assert ns.create("/many", 1.0, spec=StripeSpec(50)).layout.stripe_count == 7  # type: ignore[union-attr]


def test_specific_index_starts_there_and_skips_inactive() -> None:
    ns = make_ns(4)
    assert ns.create("/a", 1.0, spec=StripeSpec(2, 0, 2)).layout.osts == (2, 3)  # type: ignore[union-attr]
    assert ns.create("/b", 1.0, spec=StripeSpec(3, 0, 3)).layout.osts == (3, 0, 1)  # type: ignore[union-attr]
    ns.osts[1].active = False
    assert ns.create("/c", 1.0, spec=StripeSpec(1, 0, 1)).layout.osts == (2,)  # type: ignore[union-attr]


def test_rr_order_alternates_oss() -> None:
    assert rr_order(make_osts(6, per_oss=2)) == [0, 2, 4, 1, 3, 5]


def test_round_robin_balances_objects() -> None:
    ns = make_ns(8)
    for i in range(80):
        ns.create(f"/f{i}", 1.0, spec=StripeSpec(3))
    per_ost = Counter(o for _, n in ns.walk("/") if n.layout for o in n.layout.osts)
    assert set(per_ost.values()) == {30}  # 240 objects over 8 OSTs, exactly even
    assert all(o.inodes_used == 30 for o in ns.osts.values())


def test_new_files_avoid_inactive_degraded_and_full_osts() -> None:
    ns = make_ns(6)
    ns.osts[1].active = False
    ns.osts[3].used_bytes = ns.osts[3].capacity_bytes  # full
    ns.osts[4].degraded = True
    for i in range(30):
        ns.create(f"/f{i}", 1.0, spec=StripeSpec(2))
    per_ost = Counter(o for _, n in ns.walk("/") if n.layout for o in n.layout.osts)
    assert set(per_ost) == {0, 2, 5} and set(per_ost.values()) == {20}


def test_unbalanced_free_space_is_weighted_toward_emptier_osts() -> None:
    osts = make_osts(4)
    osts[0].used_bytes = osts[0].capacity_bytes * 3 // 4  # 1/4 free; others all free
    alloc = Allocator()
    picks = Counter(i for _ in range(130) for i in alloc.choose(StripeSpec(1, MiB, -1), osts))
    # weights 1 : 4 : 4 : 4 -> 10 : 40 : 40 : 40
    assert picks == {0: 10, 1: 40, 2: 40, 3: 40}


def test_no_usable_ost_is_enospc() -> None:
    ns = make_ns(2)
    for o in ns.osts.values():
        o.used_bytes = o.capacity_bytes
    with pytest.raises(LustreError) as e:
        ns.create("/f", 1.0)
    assert e.value.name == "ENOSPC" and ns.readdir("/") == []


def _layout(count: int, size: int) -> Layout:
    return Layout(size, tuple(StripeObject(i, 100 + i, 0) for i in range(count)))


def test_ten_mib_at_three_mib_over_four_osts_with_1mib_stripes() -> None:
    lay = _layout(4, MiB)
    ext = lay.extents(3 * MiB, 10 * MiB)
    assert [(e.slot, e.object_offset // MiB, e.length) for e in ext] == [
        (3, 0, MiB), (0, 1, MiB), (1, 1, MiB), (2, 1, MiB), (3, 1, MiB),
        (0, 2, MiB), (1, 2, MiB), (2, 2, MiB), (3, 2, MiB), (0, 3, MiB),
    ]
    per = Counter()
    for e in ext:
        per[e.ost] += e.length
    assert per == {0: 3 * MiB, 1: 2 * MiB, 2: 2 * MiB, 3: 3 * MiB}
    assert sum(e.length for e in ext) == 10 * MiB


def test_unaligned_range_and_single_stripe() -> None:
    lay = _layout(2, 64 * 1024)
    ext = lay.extents(60 * 1024, 10 * 1024)
    assert [(e.file_offset, e.length, e.slot, e.object_offset) for e in ext] == [
        (60 * 1024, 4 * 1024, 0, 60 * 1024), (64 * 1024, 6 * 1024, 1, 0)]
    one = _layout(1, 4 * MiB)
    assert [(e.slot, e.object_offset) for e in one.extents(5 * MiB, 6 * MiB)] == [(0, 5 * MiB), (0, 8 * MiB)]
    assert lay.extents(0, 0) == []


def test_object_sizes_sum_to_file_size() -> None:
    lay = _layout(3, MiB)
    for size in (0, 1, MiB, MiB + 1, 5 * MiB + 17, 9 * MiB):
        assert sum(lay.object_size(s, size) for s in range(3)) == size
    assert [lay.object_size(s, 5 * MiB + 17) for s in range(3)] == [2 * MiB, 2 * MiB, MiB + 17]


def test_degraded_osts_are_a_last_resort() -> None:
    ns = make_ns(3)
    for o in ns.osts.values():
        o.degraded = True
    ns.osts[0].active = False
    assert ns.create("/f", 1.0, spec=StripeSpec(-1)).layout.osts in ((1, 2), (2, 1))  # type: ignore[union-attr]
    ns.osts[1].degraded = False
    assert ns.create("/g", 1.0, spec=StripeSpec(-1)).layout.osts == (1,)  # type: ignore[union-attr]
