"""MIG on H100 80GB: profile tables, the placement engine and named layouts (pure).

Memory is cut into 8 slices; a GPU instance (GI) occupies `size` consecutive slices starting at
one of its profile's allowed starts. Free counts therefore interact: one 3g.40gb at 0 leaves only
the 1g.10gb placements 4, 5, 6 (slice 7 takes no 1g instance), so free 1g.10gb drops from 7 to 3.

GI ids are not sequential. NVML numbers GPU instances by position in a binary tree over the 8
slices (root 0 = all 8, 1–2 = halves, 3–6 = quarters, 7–14 = eighths), which is what nvidia-smi
shows on A100/H100: 7g gets 0, 3g/4g at 0 get 1, 3g at 4 gets 2, 2g at 0/2/4 get 3/4/5, 1g at
0..6 get 7..13. We reproduce that mapping: id = (8/size − 1) + start/size.
Compute-instance ids inside a GI are the CI's start slice (the default, whole-GI CI is 0).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from services.gpu_node.errors import ModelError

MEMORY_SLICES = 8


@dataclass(frozen=True)
class GiProfile:
    name: str
    gi_profile_id: int
    max_instances: int
    sm_count: int
    memory_gib: float  # as nvidia-smi mig -lgip lists it
    size: int  # memory slices per placement
    placements: tuple[int, ...]  # allowed start slices
    compute_slices: int  # how many compute slices the GI offers to compute instances


GI_PROFILES: tuple[GiProfile, ...] = (
    GiProfile("1g.10gb", 19, 7, 16, 9.75, 1, (0, 1, 2, 3, 4, 5, 6), 1),
    GiProfile("1g.10gb+me", 20, 1, 16, 9.75, 1, (0, 1, 2, 3, 4, 5, 6), 1),
    GiProfile("1g.20gb", 15, 4, 26, 19.62, 2, (0, 2, 4, 6), 1),
    GiProfile("2g.20gb", 14, 3, 32, 19.62, 2, (0, 2, 4), 2),
    GiProfile("3g.40gb", 9, 2, 60, 39.50, 4, (0, 4), 3),
    GiProfile("4g.40gb", 5, 1, 64, 39.50, 4, (0,), 4),
    GiProfile("7g.80gb", 0, 1, 132, 79.25, 8, (0,), 7),
)
PROFILES_BY_NAME: dict[str, GiProfile] = {p.name: p for p in GI_PROFILES}


@dataclass(frozen=True)
class CiProfile:
    slices: int
    ci_profile_id: int  # NVML_COMPUTE_INSTANCE_PROFILE_*: 1c=0, 2c=1, 3c=2, 4c=3, 7c=4
    max_instances: int
    placements: tuple[int, ...]  # allowed start compute slices inside the GI


_CI_PROFILE_ID = {1: 0, 2: 1, 3: 2, 4: 3, 7: 4}

# Compute-instance profiles offered by a GI, keyed by the GI's compute slices.
CI_PROFILES: dict[int, tuple[CiProfile, ...]] = {
    7: (
        CiProfile(1, 0, 7, (0, 1, 2, 3, 4, 5, 6)),
        CiProfile(2, 1, 3, (0, 2, 4)),
        CiProfile(3, 2, 2, (0, 4)),
        CiProfile(4, 3, 1, (0,)),
        CiProfile(7, 4, 1, (0,)),
    ),
    4: (CiProfile(1, 0, 4, (0, 1, 2, 3)), CiProfile(2, 1, 2, (0, 2)), CiProfile(4, 3, 1, (0,))),
    3: (CiProfile(1, 0, 3, (0, 1, 2)), CiProfile(2, 1, 1, (0,)), CiProfile(3, 2, 1, (0,))),
    2: (CiProfile(1, 0, 2, (0, 1)), CiProfile(2, 1, 1, (0,))),
    1: (CiProfile(1, 0, 1, (0,)),),
}


@dataclass
class ComputeInstance:
    id: int
    slices: int
    start: int


@dataclass
class GpuInstance:
    id: int
    profile: str
    start: int
    cis: list[ComputeInstance] = field(default_factory=list)

    @property
    def spec(self) -> GiProfile:
        return PROFILES_BY_NAME[self.profile]

    def ci(self, ci_id: int) -> ComputeInstance | None:
        return next((c for c in self.cis if c.id == ci_id), None)


# --- naming -----------------------------------------------------------------------------------


def profile_names() -> str:
    return ", ".join(f"{p.name} ({p.gi_profile_id})" for p in GI_PROFILES)


def resolve_profile(text: str) -> GiProfile:
    """A GI profile by name ("3g.40gb", "MIG 3g.40gb") or by NVML profile id as text ("9")."""
    key = text.strip().removeprefix("MIG ").strip()
    if key.isdigit():
        for p in GI_PROFILES:
            if p.gi_profile_id == int(key):
                return p
    elif key in PROFILES_BY_NAME:
        return PROFILES_BY_NAME[key]
    raise ModelError("INVALID_ARGUMENT", f"profile '{text}' unknown; valid: {profile_names()}")


def ci_device_profile(gi_profile: str, ci_slices: int) -> str:
    """The device name a CI is exposed as: the GI's name if it spans the GI, else `1c.3g.40gb`."""
    if ci_slices == PROFILES_BY_NAME[gi_profile].compute_slices:
        return gi_profile
    return f"{ci_slices}c.{gi_profile}"


def device_profile_names() -> list[str]:
    """Every MIG device profile a lease may ask for (whole-GI devices first)."""
    names = [p.name for p in GI_PROFILES]
    for p in GI_PROFILES:
        names += [f"{c.slices}c.{p.name}" for c in CI_PROFILES[p.compute_slices] if c.slices != p.compute_slices]
    return names


def k8s_resource_name(profile: str | None, strategy: str = "mixed") -> str:
    """Extended resource the NVIDIA device plugin advertises (`single`: all MIG devices look alike)."""
    if profile is None or strategy in ("single", "none"):
        return "nvidia.com/gpu"
    if strategy != "mixed":
        raise ModelError("INVALID_ARGUMENT", f"MIG strategy '{strategy}' unknown; valid: none, single, mixed")
    return f"nvidia.com/mig-{profile.replace('+', '.')}"


def slurm_gres_type(profile: str | None = None) -> str:
    """GRES type Slurm's NVML autodetection derives: lower-cased device name plus the MIG profile."""
    base = "nvidia_h100_80gb_hbm3"
    return base if profile is None else f"{base}_{profile}"


# --- placement engine -------------------------------------------------------------------------


def gi_id_for(profile: GiProfile, start: int) -> int:
    return (MEMORY_SLICES // profile.size - 1) + start // profile.size


def _span(start: int, size: int) -> range:
    return range(start, start + size)


def occupied_slices(gis: Iterable[GpuInstance]) -> set[int]:
    return {s for gi in gis for s in _span(gi.start, gi.spec.size)}


def free_placements(profile: GiProfile, gis: Sequence[GpuInstance]) -> list[int]:
    used = occupied_slices(gis)
    return [s for s in profile.placements if used.isdisjoint(_span(s, profile.size))]


def _max_disjoint(starts: Sequence[int], size: int) -> int:
    # Same-size intervals: taking them left to right is optimal.
    count, next_free = 0, -1
    for s in sorted(starts):
        if s >= next_free:
            count, next_free = count + 1, s + size
    return count


def free_instances(profile: GiProfile, gis: Sequence[GpuInstance]) -> int:
    """How many more GIs of `profile` fit, as `nvidia-smi mig -lgip` reports it."""
    existing = sum(1 for gi in gis if gi.profile == profile.name)
    room = profile.max_instances - existing
    return max(0, min(room, _max_disjoint(free_placements(profile, gis), profile.size)))


def plan_gpu_instance(
    gis: Sequence[GpuInstance], profile_text: str, start: int | None, default_ci: bool = False
) -> GpuInstance:
    """The GI that creating `profile_text` at `start` (or the first free start) would give.

    Checks everything and mutates nothing; the caller appends the result.
    """
    profile = resolve_profile(profile_text)
    same = [gi for gi in gis if gi.profile == profile.name]
    if start is not None and start not in profile.placements:
        allowed = ", ".join(map(str, profile.placements))
        raise ModelError(
            "INVALID_ARGUMENT",
            f"placement {start} not allowed for {profile.name}; allowed starts: {allowed} (size {profile.size})",
        )
    if len(same) >= profile.max_instances:
        ids = ", ".join(str(gi.id) for gi in same)
        raise ModelError(
            "RESOURCE_EXHAUSTED",
            f"{profile.name}: max {profile.max_instances} instance(s) reached (GI {ids})",
        )
    free = free_placements(profile, gis)
    if start is None:
        if not free:
            raise ModelError(
                "RESOURCE_EXHAUSTED",
                f"no free placement for {profile.name}: slices {sorted(occupied_slices(gis))} in use "
                f"by {describe(gis)}",
            )
        start = free[0]
    elif start not in free:
        clash = [gi for gi in gis if set(_span(gi.start, gi.spec.size)) & set(_span(start, profile.size))]
        raise ModelError(
            "FAILED_PRECONDITION",
            f"placement {start}:{profile.size} for {profile.name} overlaps {describe(clash)}",
        )
    gi = GpuInstance(id=gi_id_for(profile, start), profile=profile.name, start=start)
    if default_ci:
        gi.cis.append(ComputeInstance(id=0, slices=profile.compute_slices, start=0))
    return gi


def describe(gis: Iterable[GpuInstance]) -> str:
    return ", ".join(f"GI {gi.id} ({gi.profile} at {gi.start}:{gi.spec.size})" for gi in gis) or "nothing"


def ci_profiles(gi: GpuInstance) -> tuple[CiProfile, ...]:
    return CI_PROFILES[gi.spec.compute_slices]


def free_ci_placements(gi: GpuInstance, ci: CiProfile) -> list[int]:
    used = {s for c in gi.cis for s in _span(c.start, c.slices)}
    return [s for s in ci.placements if used.isdisjoint(_span(s, ci.slices))]


def free_compute_instances(gi: GpuInstance, ci: CiProfile) -> int:
    """How many more CIs of `ci` fit in `gi` (NVML's compute-instance remaining capacity)."""
    existing = sum(1 for c in gi.cis if c.slices == ci.slices)
    room = ci.max_instances - existing
    return max(0, min(room, _max_disjoint(free_ci_placements(gi, ci), ci.slices)))


def plan_compute_instance(gi: GpuInstance, slices: int, start: int | None = None) -> ComputeInstance:
    """The CI that `nvidia-smi mig -cci` with `slices` compute slices would create in `gi`, at
    compute slice `start` if given (NVML's ...CreateComputeInstanceWithPlacement), else the first free."""
    offered = ci_profiles(gi)
    ci = next((c for c in offered if c.slices == slices), None)
    if ci is None:
        valid = ", ".join(f"{c.slices}c" for c in offered)
        raise ModelError(
            "INVALID_ARGUMENT",
            f"GI {gi.id} ({gi.profile}): compute profile {slices}c not offered; valid: {valid}",
        )
    if start is not None and start not in ci.placements:
        raise ModelError(
            "INVALID_ARGUMENT",
            f"GI {gi.id} ({gi.profile}): placement {start} not allowed for {slices}c; allowed starts: "
            + ", ".join(map(str, ci.placements)),
        )
    same = sum(1 for c in gi.cis if c.slices == slices)
    free = free_ci_placements(gi, ci)
    if start is not None:
        free = [s for s in free if s == start]
    if same >= ci.max_instances or not free:
        have = ", ".join(f"CI {c.id} ({c.slices}c at {c.start})" for c in gi.cis)
        raise ModelError(
            "RESOURCE_EXHAUSTED",
            f"GI {gi.id} ({gi.profile}): no room for a {slices}c compute instance (in use: {have})",
        )
    return ComputeInstance(id=free[0], slices=slices, start=free[0])


# --- named layouts (mig-parted's default config names) ------------------------------------------

# (profile, start) in creation order; each GI gets a default compute instance, as mig-parted does.
_LAYOUTS: dict[str, tuple[tuple[str, int], ...] | None] = {
    "all-disabled": None,
    "all-enabled": (),
    "all-1g.10gb": tuple(("1g.10gb", s) for s in range(7)),
    "all-1g.10gb.me": (("1g.10gb+me", 0),),
    "all-1g.20gb": tuple(("1g.20gb", s) for s in (0, 2, 4, 6)),
    "all-2g.20gb": tuple(("2g.20gb", s) for s in (0, 2, 4)),
    "all-3g.40gb": (("3g.40gb", 0), ("3g.40gb", 4)),
    "all-4g.40gb": (("4g.40gb", 0),),
    "all-7g.80gb": (("7g.80gb", 0),),
    "all-balanced": (("1g.10gb", 0), ("1g.10gb", 1), ("2g.20gb", 2), ("3g.40gb", 4)),
}
LAYOUT_NAMES: tuple[str, ...] = tuple(_LAYOUTS)


def layout(name: str) -> tuple[bool, list[GpuInstance]]:
    """(MIG enabled, GPU instances) of a named layout, built through the placement engine."""
    if name not in _LAYOUTS:
        raise ModelError("INVALID_ARGUMENT", f"MIG layout '{name}' unknown; valid: {', '.join(LAYOUT_NAMES)}")
    plan = _LAYOUTS[name]
    if plan is None:
        return False, []
    gis: list[GpuInstance] = []
    for profile, start in plan:
        gis.append(plan_gpu_instance(gis, profile, start, default_ci=True))
    return True, gis
