"""Power, temperature, clocks and energy of one H100 SXM as a function of load and time (pure).

First-order model: power follows the load with a short time constant (the board's power
controller reacts in about a second), temperature follows power with a long one (heat capacity of
the cold plate, tens of seconds). The update is the exact solution over the step, so the result
does not depend on how often `advance` is called.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, replace

POWER_CAP_W = 700.0
IDLE_POWER_W = 70.0
BUSY_POWER_W = 690.0  # a saturated training step sits just under the cap
TAU_POWER_S = 2.0
TAU_TEMP_S = 30.0
IDLE_TEMP_C = 31.0  # FIDELITY: idle 25–42 °C; per-GPU offsets of ±3 °C keep within it
BUSY_TEMP_RISE_C = 45.0  # idle → ~76 °C at full power
MEM_TEMP_OFFSET_C = 3.0  # HBM runs a few degrees warmer than the die sensor
SM_CLOCK_IDLE_MHZ = 345
SM_CLOCK_MAX_MHZ = 1980
MEM_CLOCK_MHZ = 2619
# `nvidia-smi -q -d SUPPORTED_CLOCKS` of an H100 80GB HBM3 (as k8s-test-infra's mock NVML copies it
# from a hardware capture): memory 2619 or 1593 MHz, with either graphics 1980 down to 345 MHz in
# 15 MHz steps. The application clocks (nvidia-smi -ac) must be one of these pairs; 1980/2619 by default.
SUPPORTED_MEM_CLOCKS_MHZ = (2619, 1593)
SUPPORTED_SM_CLOCKS_MHZ = tuple(range(SM_CLOCK_MAX_MHZ, SM_CLOCK_IDLE_MHZ - 1, -15))
SLOWDOWN_TEMP_C = 91.0  # a cooling fault drives the die here
HW_SLOWDOWN_TEMP_C = 90.0  # above this the hardware clamps clocks too
SW_SLOWDOWN_CLOCK_MHZ = 1200
HW_SLOWDOWN_CLOCK_MHZ = 795


@dataclass(frozen=True)
class ThermalState:
    temp_c: float
    mem_temp_c: float
    power_w: float
    energy_mj: float  # since boot, like DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION


def idle_offset(seed: str) -> float:
    """A per-GPU constant in [-3, 3] °C, so eight GPUs do not read the same temperature."""
    h = int.from_bytes(hashlib.sha256(seed.encode()).digest()[:4], "big")
    return (h % 61) / 10.0 - 3.0


def idle_state(offset: float) -> ThermalState:
    t = IDLE_TEMP_C + offset
    return ThermalState(temp_c=t, mem_temp_c=t + MEM_TEMP_OFFSET_C, power_w=IDLE_POWER_W, energy_mj=0.0)


def target_power(util: float, cap_w: float = POWER_CAP_W) -> float:
    """What the load draws, held to the power limit (NVML's, at most the board's cap)."""
    u = min(max(util, 0.0), 100.0) / 100.0
    return min(cap_w, IDLE_POWER_W + (BUSY_POWER_W - IDLE_POWER_W) * u)


def target_temp(power_w: float, offset: float, slowdown: bool) -> float:
    if slowdown:
        return SLOWDOWN_TEMP_C
    return IDLE_TEMP_C + offset + BUSY_TEMP_RISE_C * (power_w - IDLE_POWER_W) / (POWER_CAP_W - IDLE_POWER_W)


def advance(state: ThermalState, util: float, dt: float, offset: float, slowdown: bool,
            cap_w: float = POWER_CAP_W) -> ThermalState:
    """State after `dt` seconds at constant `util` percent under a power limit of `cap_w`."""
    if dt <= 0:
        return state
    p_target = target_power(util, cap_w)
    if slowdown:
        # Clocks are clamped, so the board cannot draw full power.
        p_target = IDLE_POWER_W + (p_target - IDLE_POWER_W) * 0.6
    decay_p = math.exp(-dt / TAU_POWER_S)
    power = p_target + (state.power_w - p_target) * decay_p
    energy_j = p_target * dt + (state.power_w - p_target) * TAU_POWER_S * (1.0 - decay_p)
    t_target = target_temp(p_target, offset, slowdown)
    decay_t = math.exp(-dt / TAU_TEMP_S)
    temp = t_target + (state.temp_c - t_target) * decay_t
    mem_target = t_target + MEM_TEMP_OFFSET_C
    mem = mem_target + (state.mem_temp_c - mem_target) * decay_t
    return ThermalState(temp_c=temp, mem_temp_c=mem, power_w=power, energy_mj=state.energy_mj + energy_j * 1000.0)


def start_slowdown(state: ThermalState) -> ThermalState:
    """A cooling fault is noticed when the die is already hot: jump to just below the target."""
    hot = max(state.temp_c, SLOWDOWN_TEMP_C - 1.0)
    return replace(state, temp_c=hot, mem_temp_c=max(state.mem_temp_c, hot + MEM_TEMP_OFFSET_C))


def clocks(util: float, temp_c: float, slowdown: bool, app_sm: int = SM_CLOCK_MAX_MHZ,
           app_mem: int = MEM_CLOCK_MHZ) -> tuple[int, int, list[str]]:
    """(SM clock MHz, memory clock MHz, clock-event reasons as NVML names them). A busy GPU runs at its
    application clocks (the maximum unless nvidia-smi -ac lowered them)."""
    sm = app_sm if util > 0 else SM_CLOCK_IDLE_MHZ
    reasons: list[str] = []
    if util <= 0:
        reasons.append("GPU_IDLE")
    elif app_sm < SM_CLOCK_MAX_MHZ:
        reasons.append("APPLICATIONS_CLOCKS_SETTING")
    if slowdown:
        reasons.append("SW_THERMAL_SLOWDOWN")
        sm = min(sm, SW_SLOWDOWN_CLOCK_MHZ)
        if temp_c >= HW_SLOWDOWN_TEMP_C:
            reasons.append("HW_THERMAL_SLOWDOWN")
            sm = min(sm, HW_SLOWDOWN_CLOCK_MHZ)
    return sm, app_mem, reasons
