"""What one emulated HGX H100 server is, and the identity derived from it.

Identity (GPU UUIDs, serials, MIG device UUIDs) is a pure function of the spec, so a daemon that
is killed and restarted presents exactly the same devices, as real hardware does.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import uuid
from dataclasses import dataclass
from typing import Any

from emulator.topology.schema import HGX_H100_PCI_BUS_IDS

# The HGX H100 bus ids are the topology's default (vendors differ: the spec makes them configurable).
DEFAULT_PCI_BUS_IDS: tuple[str, ...] = tuple(HGX_H100_PCI_BUS_IDS)

# Fixed namespace so uuid5 identities are stable across versions of this code.
_IDENTITY_NAMESPACE = uuid.UUID("6f1c9a52-3c1e-5b8e-9d0a-7c2b4e8f1a33")


@dataclass(frozen=True)
class NodeSpec:
    name: str
    index: int = 0
    rack: str = ""
    leaf_pair: tuple[str, str] = ("", "")
    mig_layout: str | None = None
    pci_bus_ids: tuple[str, ...] = DEFAULT_PCI_BUS_IDS
    driver_version: str = "550.90.07"
    cuda_version: str = "12.4"
    gpu_count: int = 8
    twin: str = "twin"
    # Twin seconds the NVSwitch fabric manager needs to train the NVLinks after boot (uncertain:
    # real HGX H100 boots show a few seconds; a parameter, FIDELITY.md style).
    fabric_training_s: float = 2.0

    def __post_init__(self) -> None:
        # Accept lists (YAML/JSON) but store tuples: the spec is frozen and hashable in spirit.
        object.__setattr__(self, "pci_bus_ids", tuple(self.pci_bus_ids))
        object.__setattr__(self, "leaf_pair", tuple(self.leaf_pair))
        if len(self.pci_bus_ids) != self.gpu_count:
            raise ValueError(
                f"node {self.name}: {len(self.pci_bus_ids)} pci_bus_ids for {self.gpu_count} GPUs"
            )

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> NodeSpec:
        """Build from a topology/manifest dict, ignoring keys this service does not use."""
        known = {f.name for f in dataclasses.fields(cls)}
        kwargs = {k: v for k, v in d.items() if k in known and v is not None}
        if "mig_layout" in d:
            kwargs["mig_layout"] = d["mig_layout"]
        return cls(**kwargs)

    # --- identity -------------------------------------------------------------------------

    def _uuid5(self, *parts: object) -> uuid.UUID:
        return uuid.uuid5(_IDENTITY_NAMESPACE, "/".join(str(p) for p in (self.twin, self.name, *parts)))

    @functools.cache  # noqa: B019 - specs are few and live as long as the process
    def gpu_uuid(self, gpu: int) -> str:
        return f"GPU-{self._uuid5('gpu', gpu)}"

    @functools.cache  # noqa: B019 - specs are few and live as long as the process
    def gpu_serial(self, gpu: int) -> str:
        """13 digits, like the board serials nvidia-smi prints for H100 SXM (16549xxxxxxxx)."""
        digest = hashlib.sha256(f"{self.twin}/{self.name}/serial/{gpu}".encode()).digest()
        return "16549" + f"{int.from_bytes(digest[:8], 'big') % 10**8:08d}"

    def mig_uuid(self, gpu: int, gi_id: int, ci_id: int, profile: str) -> str:
        return f"MIG-{self._uuid5('gpu', gpu, 'gi', gi_id, 'ci', ci_id, profile)}"

    def pci_bus_id(self, gpu: int) -> str:
        return self.pci_bus_ids[gpu]
