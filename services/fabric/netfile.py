"""The compute fabric as ibsim sees it: from a topology, every switch and HCA port, cabled, and the
ibsim net file and OpenSM root-GUID file that describe it. Pure, no I/O.

What is generated (`make_fabric_plan`):

- one `Switch` per leaf and spine (`ib-leaf01`, `ib-spine01`), a Quantum-2 with `leaf_radix` /
  `spine_radix` ports and enhanced port 0;
- one single-port `Ca` per GPU-server NIC: 8 ConnectX-7 HCAs per server, ibsim node id
  `gpu001-mlx5_3`, node description `gpu001 mlx5_3` (what rdma-core sets: host name, device), all
  eight sharing the server's system-image GUID, as UFM groups a "system";
- cables as the namespace network cables them (emulator/network/plan.py): rail r of a server goes
  to the first leaf of its pair for r < n/2, else the second; every leaf reaches every spine over
  `links_per_leaf_spine` cables.

Port numbering (a convention, stable across runs): a leaf's down ports come first, server slot j
(0-based within its leaf pair) and local NIC k on port `j * n/2 + k + 1`; its uplinks take the top
ports, spine s cable i on port `radix - uplinks + s * links + i + 1`. A spine's port for leaf l
cable i is `l * links + i + 1`.

GUIDs are derived from names (SHA-256), so they are stable across runs and machines: switches
under OUI fc:6a:1c, HCAs under b8:3f:d2 (both Mellanox/NVIDIA), each node owning an aligned block
of 16 so that ibsim's port GUIDs (node GUID + port) never meet another node's.

Speeds: the seed's fabric is 400G NDR (4x at 100G per lane). Debian's ibsim 0.10 knows extended
speeds up to HDR, so every port is enabled for 4x with HDR as its best extended speed (4x HDR,
200G as the diags report it): 400G NDR is *modelled* (`MODELLED_RATE_GBPS`), not what iblinkinfo
shows.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from emulator.topology import Topology, naming

SWITCH = "switch"
HCA = "hca"

SWITCH_OUI = 0xFC6A1C
HCA_OUI = 0xB83FD2
GUID_BLOCK = 16  # GUIDs reserved per node: ibsim gives an HCA port p the GUID node + p
QUANTUM2_DEVICE_ID = 0xD2F2  # MQM9700 (Quantum-2), as `ibnetdiscover` prints it
CONNECTX7_DEVICE_ID = 0x1021  # ConnectX-7

# ibsim's enabled-capability masks (IBA PortInfo encodings).
LINK_WIDTH_4X = 2  # LinkWidthEnabled bit for 4x
LINK_SPEED_SDR_DDR_QDR = 7  # LinkSpeedEnabled: 2.5, 5 and 10 Gb/s per lane
LINK_SPEED_EXT_FDR_EDR_HDR = 7  # LinkSpeedExtEnabled: FDR, EDR, HDR (Debian's ibsim stops at HDR)
SIMULATED_SPEED = "4xHDR"
MODELLED_SPEED = "4xNDR"
MODELLED_RATE_GBPS = 400


class FabricPlanError(ValueError):
    """A topology the generated fabric cannot represent (named: what and why)."""


@dataclass(frozen=True)
class IbNode:
    id: str  # ibsim's node id, used in its commands: "ib-leaf01", "gpu001-mlx5_3"
    kind: str  # SWITCH or HCA
    ports: int
    guid: int  # node GUID; a switch's port GUID too; an HCA's port p has guid + p
    description: str  # NodeDescription as the diags print it: "ib-leaf01", "gpu001 mlx5_3"
    system: str  # the box it is in: the switch itself, or the GPU server
    system_guid: int
    device_id: int
    role: str = ""  # switches: "leaf" or "spine"
    rail: int | None = None  # HCAs: the server's rail (= NIC index)

    def port_guid(self, port: int) -> int:
        return self.guid if self.kind == SWITCH else self.guid + port


@dataclass(frozen=True)
class Cable:
    """One cable: (a, a_port) to (b, b_port); `a` is the lower end (HCA or leaf)."""

    a: str
    a_port: int
    b: str
    b_port: int
    kind: str  # "hca-leaf" or "leaf-spine"

    @property
    def id(self) -> str:
        return f"{self.a}[{self.a_port}]-{self.b}[{self.b_port}]"


@dataclass
class FabricPlan:
    topology: str
    sm_node: str  # where OpenSM attaches (ibsim's SIM_HOST): a spine's embedded SM by default
    nodes: dict[str, IbNode] = field(default_factory=dict)  # in net-file order
    cables: list[Cable] = field(default_factory=list)
    _peer: dict[tuple[str, int], tuple[str, int]] = field(default_factory=dict, repr=False)

    @property
    def switches(self) -> list[IbNode]:
        return [n for n in self.nodes.values() if n.kind == SWITCH]

    @property
    def hcas(self) -> list[IbNode]:
        return [n for n in self.nodes.values() if n.kind == HCA]

    @property
    def spines(self) -> list[IbNode]:
        return [n for n in self.switches if n.role == "spine"]

    @property
    def leaves(self) -> list[IbNode]:
        return [n for n in self.switches if n.role == "leaf"]

    def hca(self, server: str, rail: int) -> IbNode:
        try:
            return self.nodes[hca_id(server, rail)]
        except KeyError:
            raise KeyError(f"no HCA for rail {rail} of {server!r} in the {self.topology} fabric") from None

    def peer(self, node: str, port: int) -> tuple[str, int] | None:
        """The (node, port) at the other end of `node`'s `port`, or None if nothing is cabled."""
        return self._peer.get((node, port))

    def cables_between(self, a: str, b: str) -> list[Cable]:
        return [c for c in self.cables if {c.a, c.b} == {a, b}]

    def by_guid(self) -> dict[int, IbNode]:
        return {n.guid: n for n in self.nodes.values()}

    def root_guids(self) -> list[int]:
        """The spines' GUIDs: OpenSM's ftree roots."""
        return [n.guid for n in self.spines]

    def add_cable(self, cable: Cable) -> None:
        for end in ((cable.a, cable.a_port), (cable.b, cable.b_port)):
            if end in self._peer:
                raise FabricPlanError(f"port {end[1]} of {end[0]} is cabled twice")
        self.cables.append(cable)
        self._peer[(cable.a, cable.a_port)] = (cable.b, cable.b_port)
        self._peer[(cable.b, cable.b_port)] = (cable.a, cable.a_port)


def hca_id(server: str, rail: int) -> str:
    return f"{server}-mlx5_{rail}"


def derived_guid(oui: int, kind: str, name: str) -> int:
    """A stable 64-bit GUID: the OUI, then 40 bits of SHA-256(kind:name) aligned to GUID_BLOCK."""
    digest = int.from_bytes(hashlib.sha256(f"{kind}:{name}".encode()).digest()[:5], "big")
    return (oui << 40) | (digest & ~(GUID_BLOCK - 1) & ((1 << 40) - 1))


def make_fabric_plan(topo: Topology, sm_node: str | None = None) -> FabricPlan:
    """Every switch, HCA and cable of the compute plane. Raises FabricPlanError."""
    c = topo.spec.compute
    leaves = naming.series(naming.COMPUTE_LEAF, c.leaves)
    spines = naming.series(naming.COMPUTE_SPINE, c.spines)
    half = c.nics_per_server // 2
    uplinks = c.spines * c.links_per_leaf_spine
    if c.leaves * c.links_per_leaf_spine > c.spine_radix:
        raise FabricPlanError(f"{c.leaves} leaves x {c.links_per_leaf_spine} links exceed a spine's "
                              f"{c.spine_radix} ports")
    plan = FabricPlan(topology=topo.name, sm_node=sm_node or spines[0])

    used: dict[int, str] = {}

    def add(node: IbNode) -> None:
        block = node.guid // GUID_BLOCK
        if block in used:
            raise FabricPlanError(f"GUID of {node.id} collides with {used[block]}: rename one")
        used[block] = node.id
        plan.nodes[node.id] = node

    # Spines first: the first node in the file is ibsim's default attachment point.
    for role, names, radix in (("spine", spines, c.spine_radix), ("leaf", leaves, c.leaf_radix)):
        for name in names:
            guid = derived_guid(SWITCH_OUI, SWITCH, name)
            add(IbNode(name, SWITCH, radix, guid, name, name, guid, QUANTUM2_DEVICE_ID, role=role))
    for server in topo.gpu_servers:
        sys_guid = derived_guid(HCA_OUI, "system", server.name)
        for rail in range(c.nics_per_server):
            node_id = hca_id(server.name, rail)
            add(IbNode(node_id, HCA, 1, derived_guid(HCA_OUI, HCA, node_id), f"{server.name} mlx5_{rail}",
                       server.name, sys_guid, CONNECTX7_DEVICE_ID, rail=rail))

    slot_on_pair: dict[tuple[str, str], int] = {}
    for server in topo.gpu_servers:
        slot = slot_on_pair.get(server.leaf_pair, 0)
        slot_on_pair[server.leaf_pair] = slot + 1
        for rail in range(c.nics_per_server):
            leaf = server.leaf_pair[0] if rail < half else server.leaf_pair[1]
            port = slot * half + rail % half + 1
            if port > c.leaf_radix - uplinks:
                raise FabricPlanError(f"{leaf} has no down port left for {server.name} rail {rail}")
            plan.add_cable(Cable(hca_id(server.name, rail), 1, leaf, port, "hca-leaf"))
    for li, leaf in enumerate(leaves):
        for si, spine in enumerate(spines):
            for i in range(c.links_per_leaf_spine):
                up = c.leaf_radix - uplinks + si * c.links_per_leaf_spine + i + 1
                plan.add_cable(Cable(leaf, up, spine, li * c.links_per_leaf_spine + i + 1, "leaf-spine"))
    if plan.sm_node not in plan.nodes:
        raise FabricPlanError(f"SM node {plan.sm_node!r} is not in the {topo.name} fabric")
    return plan


def render_netfile(plan: FabricPlan) -> str:
    """The ibsim net file (ibnetdiscover-compatible records plus ibsim's GUID and speed lines)."""
    out = [
        f"# clustertwin: compute fabric of topology {plan.topology!r}",
        f"# {len(plan.switches)} switches, {len(plan.hcas)} HCAs, {len(plan.cables)} cables.",
        f"# Links run {SIMULATED_SPEED} in ibsim (Debian's ibsim stops at HDR); {MODELLED_SPEED} "
        f"({MODELLED_RATE_GBPS}G) is modelled.",
        f"width={LINK_WIDTH_4X}",
        f"speed={LINK_SPEED_SDR_DDR_QDR}",
        f"extspeed={LINK_SPEED_EXT_FDR_EDR_HDR}",
        "",
    ]
    for node in plan.nodes.values():
        out.append(f"devid={node.device_id:#x}")
        out.append(f"sysimgguid={node.system_guid:#018x}")
        if node.kind == SWITCH:
            out.append(f"switchguid={node.guid:#018x}")
            out.append(f'Switch\t{node.ports} "{node.id}"\t# "{node.description}" enhanced port 0')
        else:
            out.append(f"caguid={node.guid:#018x}")
            out.append(f'Ca\t{node.ports} "{node.id}"\t# "{node.description}"')
        for port in range(1, node.ports + 1):
            peer = plan.peer(node.id, port)
            if peer is not None:
                # ibnetdiscover's connection data: ibsim reads the width and speed from it.
                lmc = "" if node.kind == SWITCH else "lid 0 lmc 0 "
                remote = plan.nodes[peer[0]].description
                out.append(f'[{port}]\t"{peer[0]}"[{peer[1]}]\t\t# {lmc}"{remote}" lid 0 {SIMULATED_SPEED}')
        out.append("")
    return "\n".join(out)


def render_root_guids(plan: FabricPlan) -> str:
    """OpenSM's root_guid_file: one spine GUID per line."""
    return "".join(f"{guid:#018x}\n" for guid in plan.root_guids())
