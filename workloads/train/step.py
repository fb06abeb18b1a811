"""One training step's modelled time: compute (compute.py) plus the exposed communication the
fabric's collective model gives for the job's 3D layout on a `FabricView` (pure).

Why here and not in the fabric package: the step is the workload's notion; the fabric model only
knows collectives. A fabric that cannot carry the job (a server with no compute rail up) raises
`CollectiveError`, which the runner turns into the job's failure.
"""

from __future__ import annotations

from dataclasses import dataclass

from services.fabric.collectives import FabricView, step_comm_time
from workloads.train.compute import Compute, compute_time
from workloads.train.config import TrainConfig


@dataclass(frozen=True)
class StepTime:
    compute: Compute
    dp_s: float
    pp_s: float
    total_s: float
    tokens_per_s: float
    fabric: str  # how the fabric was seen: "healthy model" or "live: ..."

    @property
    def comm_s(self) -> float:
        return self.dp_s + self.pp_s

    @property
    def utilization(self) -> int:
        """GPU utilisation the job reports: the share of the step its kernels run (compute)."""
        return max(1, min(100, round(100 * self.compute.time_s / self.total_s)))

    def as_dict(self) -> dict[str, float | str]:
        return {"compute_s": self.compute.time_s, "dp_comm_s": self.dp_s, "pp_comm_s": self.pp_s,
                "step_s": self.total_s, "tokens_per_s": self.tokens_per_s, "fabric": self.fabric,
                "modelled": "yes"}


def step_time(cfg: TrainConfig, fabric: FabricView | None = None, fabric_note: str = "healthy model") -> StepTime:
    view = fabric if fabric is not None else FabricView.healthy(cfg.n_servers)
    comp = compute_time(cfg)
    comm = step_comm_time(int(cfg.params), cfg.dtype_bytes, tp=cfg.tp, pp=cfg.pp, dp=cfg.dp,
                          zero_stage=cfg.zero_stage, fabric=view, pp_activation_bytes=cfg.pp_activation_bytes,
                          dp_overlap=cfg.dp_overlap)
    total = comp.time_s + comm.total_s
    return StepTime(comp, comm.dp_s, comm.pp_s, total, cfg.tokens_per_step / total, fabric_note)
