"""The training job's shape and options, validated before anything is touched.

Why a separate module: the CLI, the runner, the drills and the tests all build the same job, and a
bad option must be refused with a clear message before a GPU is leased or a file written.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from emulator.errors import BadInput


class TrainConfigError(BadInput):
    """The job cannot be built as asked; the message names the option and the problem."""


GPUS_PER_SERVER = 8
STORAGE_MODELS = ("bandwidth", "lustre")


@dataclass(frozen=True)
class TrainConfig:
    """One training job. Defaults are the seed's: a 70B-parameter model, TP 8 × PP 4 × DP 32 on 1024 GPUs.

    `tokens_per_step` = global_batch (sequences) × seq_len. `mfu` is the model-FLOPs utilisation the
    compute model assumes (it includes the pipeline bubble and kernel efficiency).
    `checkpoint_bytes_per_param` 14 = bf16 weights (2) + fp32 master weights (4) + Adam m and v (4 + 4).
    """

    gpus: int = 1024
    tp: int = 8
    pp: int = 4
    params: float = 70e9
    steps: int = 1000
    global_batch: int = 1024
    seq_len: int = 4096
    hidden: int = 8192
    micro_batch: int = 1
    mfu: float = 0.4
    peak_tflops: float = 989.0
    dtype_bytes: int = 2
    zero_stage: int = 1
    dp_overlap: float = 0.0
    checkpoint_every: int = 0
    checkpoint_bytes_per_param: float = 14.0
    storage_gbps: float = 100.0
    restore_gbps: float = 0.0  # 0: same as storage_gbps
    checkpoint_scale: float = 1e-9  # stand-in bytes written = modelled bytes × this
    time_scale: float = 1000.0  # modelled seconds per wall second; 0 = as fast as possible
    job_id: str = "train"
    servers: tuple[str, ...] = field(default_factory=tuple)
    # where the data lives: a directory of dataset files read each step (e.g. staged into the Lustre
    # mount), and how the checkpoint write time is modelled: "bandwidth" (bytes / storage_gbps) or
    # "lustre" (services/lustre/estimate.py's storage model with the twin's live OSS/OST faults)
    dataset: str = ""
    dataset_reads_per_step: int = 1
    checkpoint_storage: str = "bandwidth"
    checkpoint_stripe_count: int = 4

    def __post_init__(self) -> None:
        problems = []
        if self.gpus < 1 or self.gpus % GPUS_PER_SERVER:
            problems.append(f"--gpus {self.gpus}: must be a positive multiple of {GPUS_PER_SERVER} (whole servers)")
        if self.tp < 1 or GPUS_PER_SERVER % self.tp:
            problems.append(f"--tp {self.tp}: must divide the {GPUS_PER_SERVER} GPUs of a server")
        if self.pp < 1:
            problems.append(f"--pp {self.pp}: must be >= 1")
        if self.tp >= 1 and self.pp >= 1 and self.gpus % (self.tp * self.pp):
            problems.append(f"--gpus {self.gpus} is not a multiple of tp × pp = {self.tp * self.pp}")
        if not self.params > 0 or not math.isfinite(self.params):
            problems.append(f"--params {self.params}: must be a positive number of parameters")
        if self.steps < 1:
            problems.append(f"--steps {self.steps}: must be >= 1")
        if min(self.global_batch, self.seq_len, self.hidden, self.micro_batch) < 1:
            problems.append("global batch, sequence length, hidden size and micro-batch must be >= 1")
        if not 0 < self.mfu <= 1:
            problems.append(f"--mfu {self.mfu}: a fraction in (0, 1]")
        if self.peak_tflops <= 0:
            problems.append(f"peak TFLOPS {self.peak_tflops}: must be positive")
        if self.checkpoint_every < 0:
            problems.append(f"--checkpoint-every {self.checkpoint_every}: must be >= 0 (0: never)")
        if self.storage_gbps <= 0 or self.restore_gbps < 0:
            problems.append("storage bandwidths must be positive (GB/s)")
        if not 0 <= self.checkpoint_scale <= 1:
            problems.append(f"--checkpoint-scale {self.checkpoint_scale}: a fraction in [0, 1]")
        if self.time_scale < 0:
            problems.append(f"--time-scale {self.time_scale}: must be >= 0 (0: unpaced)")
        if not 0 <= self.dp_overlap <= 1:
            problems.append(f"dp_overlap {self.dp_overlap}: a fraction in [0, 1]")
        if self.zero_stage not in (0, 1, 2):
            problems.append(f"zero_stage {self.zero_stage}: 0, 1 or 2")
        if not self.job_id or "/" in self.job_id or "+" in self.job_id or "#" in self.job_id:
            problems.append(f"--job-id {self.job_id!r}: non-empty, without '/', '+' or '#'")
        if self.servers and len(self.servers) != self.n_servers:
            problems.append(f"--servers lists {len(self.servers)} servers, --gpus {self.gpus} needs {self.n_servers}")
        if self.dataset_reads_per_step < 1:
            problems.append(f"--dataset-reads-per-step {self.dataset_reads_per_step}: must be >= 1")
        if self.checkpoint_storage not in STORAGE_MODELS:
            problems.append(f"--checkpoint-storage {self.checkpoint_storage!r}: one of {', '.join(STORAGE_MODELS)}")
        if self.checkpoint_stripe_count == 0 or self.checkpoint_stripe_count < -1:
            problems.append(f"--checkpoint-stripe-count {self.checkpoint_stripe_count}: >= 1, or -1 (all OSTs)")
        if self.servers and len(set(self.servers)) != len(self.servers):
            problems.append("--servers names a server twice")
        if not problems and self.global_batch % (self.dp * self.micro_batch):
            problems.append(f"global batch {self.global_batch} is not a multiple of dp × micro-batch "
                            f"= {self.dp * self.micro_batch}")
        if problems:
            raise TrainConfigError("; ".join(problems))

    @property
    def dp(self) -> int:
        return self.gpus // (self.tp * self.pp)

    @property
    def n_servers(self) -> int:
        return self.gpus // GPUS_PER_SERVER

    @property
    def tokens_per_step(self) -> int:
        return self.global_batch * self.seq_len

    @property
    def pp_activation_bytes(self) -> int:
        """One micro-batch's activations at a stage boundary, one TP rank's share."""
        return self.micro_batch * self.seq_len * self.hidden * self.dtype_bytes // self.tp

    @property
    def checkpoint_bytes(self) -> int:
        return int(self.params * self.checkpoint_bytes_per_param)

    def with_(self, **changes: Any) -> TrainConfig:
        return replace(self, **changes)

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["servers"] = list(self.servers)
        d.update(dp=self.dp, tokens_per_step=self.tokens_per_step, checkpoint_bytes=self.checkpoint_bytes)
        return d
