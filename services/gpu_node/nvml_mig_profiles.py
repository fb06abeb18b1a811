"""MIG profile info as NVML reports it on an H100 80GB: the snapshot lines behind
nvmlDeviceGetGpuInstanceProfileInfo(V), ...PossiblePlacements_v2, ...RemainingCapacity, the
compute-instance profile calls and nvmlDeviceGetAttributes (native/nvml/mig_profiles.c).

Slices, SM counts, memory, instance counts and placements are the twin's MIG model (mig.py), so
NVML and `twin gpu mig` cannot disagree. What mig.py does not hold is here:

- NVML's profile enum (NVML_GPU_INSTANCE_PROFILE_*) per profile: the caller walks the enum, the
  info answers the profile id (19, 9, ...) that the other calls take. The +me variant is
  1_SLICE_REV1 and 1g.20gb is 1_SLICE_REV2, as on the 80GB A100 (nvml.h; NVIDIA's k8s-test-infra
  mock NVML keys its H100 table the same way).
- Engine counts (copy engines, NVDEC, JPEG, OFA) from the H100 80GB table of NVIDIA's MIG user guide
  (Supported MIG Profiles), as transcribed in k8s-test-infra's mock-nvml-config-h100.mig.yaml; H100
  has no NVENC, so no encoders.
- A compute instance smaller than its GPU instance gets the SMs of the GPU-instance profile with as
  many compute slices (1c: 16, 2c: 32, 3c: 60, 4c: 64): derived, not read off a real H100.

Lines (nvml_snapshot.py's format), once per page:
    gip ENUM ID SLICES INSTANCES SM MEM_MIB CE DEC ENC JPEG OFA SIZE STARTMASK NAME
    cip GI_ID ENUM SLICES INSTANCES SM STARTMASK NAME     one per CI profile a GI profile offers
and per MIG-enabled GPU:
    gifree ID N                       nvmlDeviceGetGpuInstanceRemainingCapacity
    cifree GI CI_ENUM N               nvmlGpuInstanceGetComputeInstanceRemainingCapacity
STARTMASK has bit s set for each allowed start slice s (memory slices for a GI, compute slices
inside the GI for a CI).
"""

from __future__ import annotations

from services.gpu_node import mig

NVML_GI_ENUM = {"1g.10gb": 0, "2g.20gb": 1, "3g.40gb": 2, "4g.40gb": 3, "7g.80gb": 4,
                "1g.10gb+me": 7, "1g.20gb": 9}
# (copy engines, NVDEC, NVENC, JPEG, OFA) per GPU-instance profile
ENGINES = {"1g.10gb": (1, 1, 0, 1, 0), "1g.10gb+me": (1, 1, 0, 1, 1), "1g.20gb": (1, 1, 0, 1, 0),
           "2g.20gb": (2, 2, 0, 2, 0), "3g.40gb": (3, 3, 0, 3, 0), "4g.40gb": (4, 4, 0, 4, 0),
           "7g.80gb": (8, 7, 0, 7, 1)}


def _sm_by_slices() -> dict[int, int]:
    """The SMs of the first (non-variant) GPU-instance profile with each compute-slice count."""
    out: dict[int, int] = {}
    for p in mig.GI_PROFILES:
        out.setdefault(p.compute_slices, p.sm_count)
    return out


def _mask(starts: tuple[int, ...]) -> int:
    return sum(1 << s for s in starts)


def ci_sm_count(gi: mig.GiProfile, slices: int) -> int:
    return gi.sm_count if slices == gi.compute_slices else _sm_by_slices()[slices]


def profile_lines() -> list[str]:
    lines = []
    for p in mig.GI_PROFILES:
        ce, dec, enc, jpeg, ofa = ENGINES[p.name]
        lines.append(f"gip {NVML_GI_ENUM[p.name]} {p.gi_profile_id} {p.compute_slices} {p.max_instances} "
                     f"{p.sm_count} {int(p.memory_gib * 1024)} {ce} {dec} {enc} {jpeg} {ofa} {p.size} "
                     f"{_mask(p.placements)} MIG {p.name}")
        for c in mig.CI_PROFILES[p.compute_slices]:
            lines.append(f"cip {p.gi_profile_id} {c.ci_profile_id} {c.slices} {c.max_instances} "
                         f"{ci_sm_count(p, c.slices)} {_mask(c.placements)} "
                         f"MIG {mig.ci_device_profile(p.name, c.slices)}")
    return lines


PROFILE_LINES = profile_lines()   # the tables never change: rendered once


def capacity_lines(gis: list[mig.GpuInstance]) -> list[str]:
    """What is still free on a MIG-enabled GPU with GPU instances `gis`, per GI profile (as
    `nvidia-smi mig -lgip` counts it) and per CI profile of each GI."""
    lines = [f"gifree {p.gi_profile_id} {mig.free_instances(p, gis)}" for p in mig.GI_PROFILES]
    for gi in gis:
        lines += [f"cifree {gi.id} {c.ci_profile_id} {mig.free_compute_instances(gi, c)}"
                  for c in mig.ci_profiles(gi)]
    return lines
