"""The topology file format: pydantic models of the YAML, one per section.

Field checks live here (types, ranges, a single field's shape); checks that relate several
fields (does the fabric have the ports, can the EC profile be placed) live in `consistency.py`,
so each error can name the field it is about. Unknown keys are errors: a typo must not silently
fall back to a default. Models are strict (no "8" for 8), as a config file should be.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

# The HGX/DGX H100 bus ids; other vendors' boards differ, hence configurable.
HGX_H100_PCI_BUS_IDS = [
    "00000000:18:00.0",
    "00000000:2A:00.0",
    "00000000:3A:00.0",
    "00000000:5D:00.0",
    "00000000:9A:00.0",
    "00000000:AB:00.0",
    "00000000:BA:00.0",
    "00000000:DB:00.0",
]

Count = Annotated[int, Field(ge=0)]
Positive = Annotated[int, Field(ge=1)]
PositiveFloat = Annotated[float, Field(gt=0)]
HostName = Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]{0,62}$")]
PciBusId = Annotated[str, Field(pattern=r"^[0-9A-F]{8}:[0-9A-F]{2}:[0-9A-F]{2}\.[0-7]$")]


def _even(value: int) -> int:
    # Switch ports come in pairs (two ports per OSFP cage), and leaves come in pairs.
    if value % 2:
        raise ValueError("must be even")
    return value


Even = AfterValidator(_even)


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class GpuServerType(Section):
    model: str = "HGX H100 8-GPU"
    gpus_per_server: Positive = 8
    gpu_model: str = "NVIDIA H100 80GB HBM3"
    power_kw: PositiveFloat = 10.2
    driver_version: str = "550.90.07"
    cuda_version: str = "12.4"
    pci_bus_ids: list[PciBusId] = Field(default_factory=lambda: list(HGX_H100_PCI_BUS_IDS))


class Servers(Section):
    count: Positive
    per_rack: Positive


class Mig(Section):
    """MIG on the last `last_servers` servers (training takes whole GPUs from the front)."""

    last_servers: Count
    layout: str


class ComputeFabric(Section):
    """InfiniBand two-layer fat tree: every leaf to every spine, each server on a leaf pair."""

    technology: Literal["infiniband"] = "infiniband"
    kind: Literal["two-layer-fat-tree"] = "two-layer-fat-tree"
    rate_gbps: Positive = 400
    nics_per_server: Annotated[Positive, Even] = 8  # split evenly across the server's leaf pair
    leaf_radix: Annotated[Positive, Even] = 64
    spine_radix: Annotated[Positive, Even] = 64
    leaves: Annotated[Positive, Even]
    spines: Positive
    links_per_leaf_spine: Positive
    sharp: bool = True
    # A requirement, not a description: true makes an oversubscribed design a validation error.
    non_blocking: bool = False


class Segment(Section):
    name: HostName
    lossless: bool  # PFC/ECN: needed by RoCE (Lustre RDMA), not wanted for TCP traffic
    vlan: Annotated[int, Field(ge=1, le=4094)] | None = None
    carries: list[Literal["lustre-rdma", "ceph", "s3", "business", "management"]] = Field(
        default_factory=list
    )


class EthernetFabric(Section):
    """The 400 GbE storage/general spine-leaf, its segments isolated by VRF or VLAN."""

    rate_gbps: Positive = 400
    radix: Annotated[Positive, Even] = 64
    leaves: Positive
    spines: Positive
    links_per_leaf_spine: Positive
    isolation: Literal["vrf", "vlan"] = "vrf"
    nics_per_server: Positive = 2
    nics_per_storage_node: Positive = 2
    nics_per_management_node: Positive = 2
    segments: list[Segment] = Field(min_length=1)


class OutOfBand(Section):
    """A redundant core pair, with access switches below it once the endpoints outgrow it.

    With no access switches every endpoint plugs into one of the core switches (a star);
    each access switch has one uplink to every core switch.
    """

    rate_gbps: Positive = 10
    core_switches: Literal[2] = 2
    access_switches: Count = 0
    radix: Positive = 48
    pdus_per_rack: Count = 2


class Lustre(Section):
    fsname: Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]{0,7}$")] = "lustre"  # Lustre: <= 8
    mds: Positive = 2
    mds_ha: bool = True  # MDS in failover pairs
    mdts_per_mds: Positive = 1
    mdt_size_tb: PositiveFloat = 3.84
    oss: Positive
    oss_failover_pairs: bool = True
    osts_per_oss: Positive
    ost_size_tb: PositiveFloat


class ErasureCode(Section):
    k: Positive = 8
    m: Positive = 3
    failure_domain: Literal["host", "osd"] = "host"


class Replicated(Section):
    size: Positive = 3
    failure_domain: Literal["host", "osd"] = "host"


class Ceph(Section):
    hosts: Positive
    hdd_per_host: Positive
    hdd_size_tb: PositiveFloat
    ssd_hosts: Count = 0  # the first N hosts also carry SSD OSDs, the RBD pool's device class
    ssd_per_host: Count = 0
    ssd_size_tb: PositiveFloat = 7.68
    ec: ErasureCode = ErasureCode()
    rbd: Replicated | None = Replicated()


class ManagementNode(Section):
    name: HostName
    role: Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]*$")]  # e.g. k8s-control-plane, ufm


class TopologySpec(Section):
    name: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9._-]*$")]
    description: str = ""
    gpu_server: GpuServerType = GpuServerType()
    servers: Servers
    mig: Mig | None = None
    compute: ComputeFabric
    ethernet: EthernetFabric
    oob: OutOfBand = OutOfBand()
    lustre: Lustre | None = None
    ceph: Ceph | None = None
    management_nodes: list[ManagementNode] = Field(default_factory=list)
