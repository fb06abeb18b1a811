"""MIG placement rules of H100 80GB: every profile, interactions, rejections, CIs, ids, layouts."""

from __future__ import annotations

import pytest

from services.gpu_node import mig
from services.gpu_node.errors import ModelError
from services.gpu_node.model import NodeModel
from services.gpu_node.spec import NodeSpec

EXPECTED = {  # name: (GI profile id, max, SMs, GiB, size, placements)
    "1g.10gb": (19, 7, 16, 9.75, 1, (0, 1, 2, 3, 4, 5, 6)),
    "1g.10gb+me": (20, 1, 16, 9.75, 1, (0, 1, 2, 3, 4, 5, 6)),
    "1g.20gb": (15, 4, 26, 19.62, 2, (0, 2, 4, 6)),
    "2g.20gb": (14, 3, 32, 19.62, 2, (0, 2, 4)),
    "3g.40gb": (9, 2, 60, 39.50, 4, (0, 4)),
    "4g.40gb": (5, 1, 64, 39.50, 4, (0,)),
    "7g.80gb": (0, 1, 132, 79.25, 8, (0,)),
}


def build(*plan: tuple[str, int | None]) -> list[mig.GpuInstance]:
    gis: list[mig.GpuInstance] = []
    for profile, start in plan:
        gis.append(mig.plan_gpu_instance(gis, profile, start))
    return gis


def free(gis: list[mig.GpuInstance]) -> dict[str, int]:
    return {p.name: mig.free_instances(p, gis) for p in mig.GI_PROFILES}


@pytest.mark.parametrize("name", EXPECTED)
def test_profile_table_and_empty_gpu(name: str) -> None:
    p = mig.PROFILES_BY_NAME[name]
    assert (p.gi_profile_id, p.max_instances, p.sm_count, p.memory_gib, p.size, p.placements) == EXPECTED[name]
    assert mig.free_placements(p, []) == list(p.placements)
    assert mig.free_instances(p, []) == p.max_instances


@pytest.mark.parametrize("name", EXPECTED)
def test_fill_to_max_then_refuse(name: str) -> None:
    p = mig.PROFILES_BY_NAME[name]
    gis: list[mig.GpuInstance] = []
    for _ in range(p.max_instances):
        gis.append(mig.plan_gpu_instance(gis, name, None))
    assert [gi.start for gi in gis] == list(p.placements)[: p.max_instances]
    with pytest.raises(ModelError) as e:
        mig.plan_gpu_instance(gis, name, None)
    assert e.value.code == "RESOURCE_EXHAUSTED"


def test_3g_at_0_leaves_three_1g() -> None:
    gis = build(("3g.40gb", 0))
    assert free(gis)["1g.10gb"] == 3
    assert mig.free_placements(mig.PROFILES_BY_NAME["1g.10gb"], gis) == [4, 5, 6]
    assert free(gis)["3g.40gb"] == 1 and free(gis)["4g.40gb"] == 0 and free(gis)["2g.20gb"] == 1


def test_7g_blocks_everything() -> None:
    assert set(free(build(("7g.80gb", 0))).values()) == {0}


def test_4g_plus_3g_fills_the_gpu() -> None:
    gis = build(("4g.40gb", 0), ("3g.40gb", 4))
    assert mig.occupied_slices(gis) == set(range(8))
    assert set(free(gis).values()) == {0}


def test_1g20gb_placements() -> None:
    gis = build(("1g.20gb", None), ("1g.20gb", None))
    assert [gi.start for gi in gis] == [0, 2]
    assert mig.free_placements(mig.PROFILES_BY_NAME["1g.20gb"], gis) == [4, 6]


@pytest.mark.parametrize(
    ("plan", "profile", "start", "code", "words"),
    [
        ((), "5g.40gb", None, "INVALID_ARGUMENT", "valid: 1g.10gb"),
        ((), "3g.40gb", 2, "INVALID_ARGUMENT", "allowed starts: 0, 4"),
        ((("2g.20gb", 2),), "3g.40gb", 0, "FAILED_PRECONDITION", "overlaps GI 4"),
        ((("3g.40gb", 0), ("2g.20gb", 4)), "3g.40gb", None, "RESOURCE_EXHAUSTED", "no free placement"),
        ((("4g.40gb", 0),), "4g.40gb", None, "RESOURCE_EXHAUSTED", "max 1"),
    ],
)
def test_rejections(plan, profile, start, code, words) -> None:
    gis = build(*plan)
    snapshot = [(g.id, g.start) for g in gis]
    with pytest.raises(ModelError) as e:
        mig.plan_gpu_instance(gis, profile, start)
    assert e.value.code == code and words in e.value.message
    assert [(g.id, g.start) for g in gis] == snapshot


def test_model_rejection_leaves_layout_unchanged() -> None:
    m = NodeModel(NodeSpec(name="gpu003"), 0.0)
    m.set_mig_mode(2, True, 1.0)
    m.create_gpu_instance(2, "3g.40gb", 2.0, placement_start=0)
    before = m.to_state()
    with pytest.raises(ModelError) as e:
        m.create_gpu_instance(2, "5g.40gb", 3.0)
    assert e.value.message.startswith("gpu003: GPU 2: profile '5g.40gb' unknown; valid: 1g.10gb")
    with pytest.raises(ModelError):
        m.create_gpu_instance(2, "4g.40gb", 3.0)
    assert m.to_state() == before


def test_profile_by_numeric_id() -> None:
    assert mig.resolve_profile("9").name == "3g.40gb"
    assert mig.resolve_profile("MIG 1g.10gb").gi_profile_id == 19


@pytest.mark.parametrize(
    ("gi_profile", "offers"),
    [
        ("7g.80gb", {1: 7, 2: 3, 3: 2, 4: 1, 7: 1}),
        ("4g.40gb", {1: 4, 2: 2, 4: 1}),
        ("3g.40gb", {1: 3, 2: 1, 3: 1}),
        ("2g.20gb", {1: 2, 2: 1}),
        ("1g.10gb", {1: 1}),
        ("1g.20gb", {1: 1}),
    ],
)
def test_compute_instance_profiles(gi_profile: str, offers: dict[int, int]) -> None:
    gi = mig.plan_gpu_instance([], gi_profile, None)
    assert {c.slices: c.max_instances for c in mig.ci_profiles(gi)} == offers
    for slices, count in offers.items():
        gi.cis = []
        for _ in range(count):
            gi.cis.append(mig.plan_compute_instance(gi, slices))
        assert len({c.id for c in gi.cis}) == count
        with pytest.raises(ModelError) as e:
            mig.plan_compute_instance(gi, slices)
        assert e.value.code == "RESOURCE_EXHAUSTED"
    with pytest.raises(ModelError) as e:
        mig.plan_compute_instance(gi, 5)
    assert e.value.code == "INVALID_ARGUMENT"


def test_ci_naming() -> None:
    assert mig.ci_device_profile("3g.40gb", 3) == "3g.40gb"
    assert mig.ci_device_profile("3g.40gb", 1) == "1c.3g.40gb"


def test_gi_ids_are_not_sequential() -> None:
    assert [gi.id for gi in build(*[("1g.10gb", s) for s in range(7)])] == list(range(7, 14))
    assert [gi.id for gi in build(("3g.40gb", 0), ("3g.40gb", 4))] == [1, 2]
    assert [gi.id for gi in build(("2g.20gb", 0), ("2g.20gb", 2), ("2g.20gb", 4))] == [3, 4, 5]
    assert build(("7g.80gb", 0))[0].id == 0
    assert build(("4g.40gb", 0))[0].id == 1


def test_named_layouts() -> None:
    assert mig.layout("all-disabled") == (False, [])
    assert mig.layout("all-enabled") == (True, [])
    enabled, gis = mig.layout("all-balanced")
    assert enabled
    assert sorted(g.profile for g in gis) == ["1g.10gb", "1g.10gb", "2g.20gb", "3g.40gb"]
    assert all(len(g.cis) == 1 and g.cis[0].slices == g.spec.compute_slices for g in gis)
    assert [g.profile for g in mig.layout("all-1g.10gb")[1]] == ["1g.10gb"] * 7
    assert len(mig.layout("all-2g.20gb")[1]) == 3 and len(mig.layout("all-3g.40gb")[1]) == 2
    with pytest.raises(ModelError) as e:
        mig.layout("all-5g")
    assert e.value.code == "INVALID_ARGUMENT" and "all-balanced" in e.value.message


def test_resource_names() -> None:
    assert mig.k8s_resource_name("1g.10gb", "single") == "nvidia.com/gpu"
    assert mig.k8s_resource_name("1g.10gb", "mixed") == "nvidia.com/mig-1g.10gb"
    assert mig.slurm_gres_type("1g.10gb") == "nvidia_h100_80gb_hbm3_1g.10gb"
    assert mig.slurm_gres_type() == "nvidia_h100_80gb_hbm3"
