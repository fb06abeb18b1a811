"""The spec of the GPU server daemon (DaemonConfig.spec, typed): the server services/gpu_node/plan.py
gives it (the topology's GpuServerSpec and the twin's name) and what it parses at start (a malformed
spec stops it with the field named). The model's own NodeSpec (spec.py) is made from it."""

from __future__ import annotations

from emulator.daemon_config import DaemonSpec
from services.gpu_node.spec import DEFAULT_PCI_BUS_IDS, NodeSpec


class GpuNodeSpec(DaemonSpec):
    name: str
    index: int = 0
    rack: str = ""
    leaf_pair: tuple[str, str] = ("", "")
    mig_layout: str | None = None           # the MIG layout the server boots with (None: MIG off)
    pci_bus_ids: tuple[str, ...] = DEFAULT_PCI_BUS_IDS
    driver_version: str = "550.90.07"
    cuda_version: str = "12.4"
    gpu_count: int = 8
    twin: str = "twin"                      # the twin's name: part of the GPUs' UUIDs

    def node(self) -> NodeSpec:
        return NodeSpec.from_dict(self.model_dump())
