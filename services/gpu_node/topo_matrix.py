"""`nvidia-smi topo -m` of an HGX H100 server with 8 ConnectX-7 compute NICs.

Every GPU pair is NV18 (18 NVLink4 links through the NVSwitches). NIC i sits behind the same PCIe
switch as GPU i (PIX); devices on the same CPU socket traverse the host bridges (NODE), across
sockets the UPI link (SYS). Cells are tab-separated, as the real tool prints them.
"""

from __future__ import annotations

from dataclasses import dataclass

GPUS = 8
NICS = 8
NIC_NAMES = tuple(f"mlx5_{i}" for i in range(NICS))
CPU_AFFINITY = ("0-55,112-167", "56-111,168-223")

LEGEND = """Legend:

  X    = Self
  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)
  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node
  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)
  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)
  PIX  = Connection traversing at most a single PCIe bridge
  NV#  = Connection traversing a bonded set of # NVLinks"""


@dataclass(frozen=True)
class TopoRow:
    label: str
    cells: list[str]
    cpu_affinity: str  # empty for NIC rows, which nvidia-smi prints without affinity columns
    numa_affinity: str


@dataclass(frozen=True)
class TopoMatrix:
    labels: list[str]
    rows: list[TopoRow]
    text: str


def _socket(i: int) -> int:
    return 0 if i < 4 else 1  # GPUs and NICs alike: 0–3 on socket 0, 4–7 on socket 1


def _pcie(a: int, b: int, same_kind: bool) -> str:
    if a == b:
        return "X" if same_kind else "PIX"
    return "NODE" if _socket(a) == _socket(b) else "SYS"


def topology(links_up: dict[int, int] | None = None) -> TopoMatrix:
    """The matrix for the visible GPUs (`links_up`: GPU index → NVLinks up; default all 8 with 18).

    A lost GPU is left out of `links_up` and so drops out, as nvidia-smi cannot open it; a pair
    shows NV# with the smaller of the two GPUs' active link counts.
    """
    links_up = {i: 18 for i in range(GPUS)} if links_up is None else links_up
    gpus = sorted(links_up)
    labels = [f"GPU{i}" for i in gpus] + [f"NIC{i}" for i in range(NICS)]
    rows: list[TopoRow] = []
    for g in gpus:
        cells = ["X" if h == g else f"NV{min(links_up[g], links_up[h])}" for h in gpus]
        cells += [_pcie(g, n, False) for n in range(NICS)]
        rows.append(TopoRow(f"GPU{g}", cells, CPU_AFFINITY[_socket(g)], str(_socket(g))))
    for n in range(NICS):
        cells = [_pcie(n, g, False) for g in gpus] + [_pcie(n, m, True) for m in range(NICS)]
        rows.append(TopoRow(f"NIC{n}", cells, "", ""))
    return TopoMatrix(labels=labels, rows=rows, text=render(labels, rows))


def render(labels: list[str], rows: list[TopoRow]) -> str:
    head = "\t" + "\t".join(labels) + "\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID"
    lines = [head]
    for r in rows:
        line = f"{r.label}\t" + "\t".join(" X " if c == "X" else c for c in r.cells)
        if r.cpu_affinity:
            line += f"\t{r.cpu_affinity}\t{r.numa_affinity}\t\tN/A"
        lines.append(line)
    nic_legend = "\n".join(f"  NIC{i}: {name}" for i, name in enumerate(NIC_NAMES))
    return "\n".join(lines) + "\n\n" + LEGEND + "\n\nNIC Legend:\n\n" + nic_legend + "\n"
