"""The Lustre time model at the seed's scale (services/lustre/estimate.py): pure, no twin."""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

import pytest

from services.lustre.estimate import (
    ClusterModel,
    LiveState,
    checkpoint_write_seconds,
    estimate,
    live_state_from_twin,
    storage_model,
)
from services.lustre.manifest import LustreSection
from tests.fake_manifest import lustre_section

TB = 10**12


def test_healthy_seed_is_tb_per_second_and_scales_with_oss():
    e = estimate("read", 10 * TB, -1)
    assert e.modelled and e.osts_usable == 96 and 0.5e12 < e.aggregate_bps < 2e12
    half = estimate("read", 10 * TB, -1, model=ClusterModel(oss=12))
    assert half.aggregate_bps == pytest.approx(e.aggregate_bps / 2, rel=0.01)
    assert "modelled" in e.text()


def test_wider_stripes_are_faster_until_the_servers_limit():
    t = [checkpoint_write_seconds(2 * TB, c) for c in (1, 2, 4, -1)]
    assert t[0] > t[1] > t[2] >= t[3]
    one_node = [estimate("write", 100 * 10**9, c, nodes=1).seconds for c in (1, 4)]
    assert one_node[0] > 3 * one_node[1]          # one stream per OST: striping is what makes one node fast


def test_a_lost_oss_lowers_the_aggregate():
    healthy = estimate("write", 2 * TB, 4)
    partnered = estimate("write", 2 * TB, 4, LiveState(failed_oss=frozenset({0})))
    assert partnered.aggregate_bps < healthy.aggregate_bps and partnered.seconds > healthy.seconds
    assert "partner" in partnered.bottleneck and not partnered.reads_blocked
    pair = estimate("write", 2 * TB, 4, LiveState(failed_oss=frozenset({0, 1})))
    assert pair.osts_usable == 88 and pair.reads_blocked == list(range(8))
    assert pair.aggregate_bps < healthy.aggregate_bps
    alone = estimate("write", 2 * TB, 4, LiveState(failed_oss=frozenset({0})),
                     model=ClusterModel(failover_pairs=False))
    assert alone.reads_blocked == [0, 1, 2, 3] and any("EIO" in n for n in alone.notes)


def test_full_osts_are_avoided_by_writes_only():
    st = LiveState(full_osts=frozenset({3, 4}))
    assert estimate("write", TB, -1, st).osts_usable == 94
    assert estimate("read", TB, -1, st).osts_usable == 96


def test_storage_hook_and_edge_cases():
    f = storage_model(4)
    assert f(0) == pytest.approx(ClusterModel().metadata_s) and f(TB) > f(TB // 2) > 0
    assert checkpoint_write_seconds(TB, 4, None) == f(TB)
    everything = LiveState(failed_oss=frozenset(range(24)))
    assert math.isinf(estimate("write", TB, 4, everything).seconds)
    for bad in ({"nbytes": -1}, {"stripe_count": -2}, {"nodes": 0}):
        kw = {"op": "write", "nbytes": TB, "stripe_count": 1} | bad
        with pytest.raises(ValueError):
            estimate(**kw)


def test_live_state_from_a_twin_statfs():
    osts = {i: f"oss0{i // 2 + 1}" for i in range(4)}
    lustre = LustreSection.model_validate(lustre_section(Path("/nonexistent"), osts))
    rows = [SimpleNamespace(index=i, server=s, active=a, full=f) for i, s, a, f in
            [(0, "oss02", True, False), (1, "oss02", True, False), (2, "oss02", True, True), (3, "oss02", True, False)]]
    st = live_state_from_twin(lustre, rows)
    assert st.failed_oss == {0} and st.full_osts == {2} and not st.inactive_osts
    assert live_state_from_twin(lustre, rows, down_oss={"oss02"}).failed_oss == {0, 1}
