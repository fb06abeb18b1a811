"""The compute model: how long one step's arithmetic takes on H100s (pure).

A dense transformer costs ~6 FLOPs per parameter per token (forward 2, backward 4). Spread over
the job's GPUs at the H100's dense BF16 peak (989 TFLOPS) times the achieved MFU, that gives a
step's compute time; the MFU is the model's one knob (it absorbs the pipeline bubble, kernel
efficiency and the TP all-reduces hidden inside each layer).
"""

from __future__ import annotations

from dataclasses import dataclass

from workloads.train.config import TrainConfig

H100_BF16_DENSE_TFLOPS = 989.0


@dataclass(frozen=True)
class Compute:
    flops_per_step: float
    flops_per_gpu: float
    time_s: float
    tokens_per_step: int
    mfu: float
    peak_tflops: float


def step_flops(params: float, tokens: int) -> float:
    """6·N·T: forward and backward of a dense model of N parameters over T tokens."""
    return 6.0 * params * tokens


def compute_time(cfg: TrainConfig) -> Compute:
    flops = step_flops(cfg.params, cfg.tokens_per_step)
    per_gpu = flops / cfg.gpus
    t = per_gpu / (cfg.peak_tflops * 1e12 * cfg.mfu)
    return Compute(flops, per_gpu, t, cfg.tokens_per_step, cfg.mfu, cfg.peak_tflops)
