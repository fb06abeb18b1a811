"""The MDT's tunables (services/lustre/mds/params.py): lctl's names and values, what a set changes, and
what it refuses without changing anything."""

from __future__ import annotations

import pytest

from services.lustre.errors import LustreError
from services.lustre.mds.params import U64_MAX, Param, listing, parse_value, set_param
from services.lustre.namespace import ATIME_DIFF_NS
from tests.unit.lustre.helpers import make_ns


def test_atime_diff_is_listed_under_the_mdts_name_in_seconds() -> None:
    ns = make_ns()
    assert ns.atime_diff_ns == ATIME_DIFF_NS
    assert listing(ns) == [Param("mdd.testfs-MDT0000.atime_diff", 60, 0, U64_MAX)]


@pytest.mark.parametrize(("text", "value"), [("0", 0), ("3600", 3600), (" 90\n", 90), ("0x10", 16), ("010", 8),
                                             (str(U64_MAX), U64_MAX)])
def test_values_are_read_as_the_proc_handler_reads_them(text: str, value: int) -> None:
    ns = make_ns()
    assert parse_value(text) == value
    assert set_param(ns, "mdd.testfs-MDT0000.atime_diff", text).value == value
    assert ns.atime_diff_ns == value * 10**9


@pytest.mark.parametrize(("name", "value", "errno_name"), [
    ("mdd.testfs-MDT0000.atime_diff", "soon", "EINVAL"),
    ("mdd.testfs-MDT0000.atime_diff", "-1", "EINVAL"),
    ("mdd.testfs-MDT0000.atime_diff", str(U64_MAX + 1), "EINVAL"),
    ("mdd.testfs-MDT0000.atime_diff", "", "EINVAL"),
    ("mdd.testfs-MDT0000.no_such", "1", "ENOENT"),
    ("mdd.*.atime_diff", "1", "ENOENT"),   # a glob is lctl's to expand, not the MDS's
])
def test_a_bad_name_or_value_is_refused_and_changes_nothing(name: str, value: str, errno_name: str) -> None:
    ns = make_ns()
    with pytest.raises(LustreError) as e:
        set_param(ns, name, value)
    assert e.value.name == errno_name
    assert ns.atime_diff_ns == ATIME_DIFF_NS
