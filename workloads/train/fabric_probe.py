"""How the job sees the compute fabric: from the twin's fabric manager when it runs one, else the
healthy model.

Live: `Analyze` lists the servers that lost rails (HCA ports not Active), `EstimateCollective` over
the job's servers (one rank per server, as a DP group) gives the spine congestion its ring meets on
the live routes. A server of the job with no compute rail up means its paths are lost: the job
cannot run a collective and fails, as NCCL does after its timeout.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from services.fabric.collectives import FabricView


@dataclass(frozen=True)
class FabricSeen:
    view: FabricView
    note: str
    lost: tuple[str, ...] = ()  # job servers with no compute rail up
    degraded: tuple[str, ...] = ()  # job servers with some rails down

    @property
    def ok(self) -> bool:
        return not self.lost


def healthy(servers: Sequence[str], rails: int = 8) -> FabricSeen:
    return FabricSeen(FabricView(rails_up=dict.fromkeys(servers, rails), rails=rails),
                      "healthy fabric model (no fabric manager in this twin)")


def live(fabric: Any, servers: Sequence[str], rails: int = 8) -> FabricSeen:
    """`fabric` is a `services.fabric.sdk.FabricClient`."""
    analysis = fabric.call("Analyze", pattern="ring")
    ups = dict.fromkeys(servers, rails)
    for d in analysis.degraded_servers:
        if d.server in ups:
            ups[d.server] = min(int(d.rails_up), rails)
    lost = tuple(sorted(s for s, n in ups.items() if n <= 0))
    degraded = tuple(sorted(s for s, n in ups.items() if 0 < n < rails))
    congestion = 1.0
    if not lost and len(servers) > 1:
        est = fabric.call("EstimateCollective", op="all_gather", ranks=len(servers), bytes=1 << 20,
                          servers=list(servers), gpus_per_server=1)
        congestion = max(1.0, float(est.congestion))
    note = "live fabric (fabric manager: Analyze + EstimateCollective)"
    if degraded:
        note += f"; rails down on {', '.join(f'{s} {ups[s]}/{rails}' for s in degraded)}"
    if congestion > 1:
        note += f"; spine congestion {congestion:g}"
    return FabricSeen(FabricView(rails_up=ups, rails=rails, congestion=congestion), note, lost, degraded)
