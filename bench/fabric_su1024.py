"""Measure the real subnet manager on su-1024 (1024 HCAs, 48 switches): time to SUBNET UP, and
re-route time after a leaf-spine link failure (to OpenSM's "SUBNET UP", and to the new LFT read
back with ibroute). A program, not a test (root, ibsim-utils, opensm, infiniband-diags):

    sudo .venv/bin/python -m bench.fabric_su1024 [--runs 3] [--topology su-1024]

PLATFORM.md's reference on this VM: ~1-1.5 s up, 0.4-0.8 s re-route.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from bench.options import parse_options
from emulator.topology import load_topology
from services.fabric.balance import all_to_all_flows, leaf_capacity, ring_flows, route_balance
from services.fabric.netfile import make_fabric_plan
from services.fabric.subnet import Subnet


def one_run(topology: str, run_dir: Path) -> dict[str, float]:
    topo = load_topology(topology)
    plan = make_fabric_plan(topo)
    leaf, spine = plan.leaves[0].id, plan.spines[0].id
    dead = plan.cables_between(leaf, spine)[0].a_port
    out: dict[str, float] = {}
    with Subnet(plan, run_dir) as subnet:
        out["subnet_up_s"] = subnet.start(timeout=60)
        t = time.monotonic()
        state = subnet.snapshot()
        out["snapshot_s"] = time.monotonic() - t
        assert all(p.active and p.lid for p in state.ca_ports()) and len(state.ca_ports()) == len(plan.hcas)
        leaf_lid = state.lid_of(leaf)
        before = subnet.lft(leaf_lid)
        t0 = time.monotonic()
        sweep = subnet.link_down(leaf, dead, timeout=30)
        out["reroute_subnet_up_s"] = sweep.seconds
        after = subnet.lft(leaf_lid)
        out["reroute_lft_read_s"] = time.monotonic() - t0
        assert sweep.trap_128 and dead not in after.values()
        out["lft_entries_changed"] = sum(1 for lid in before if before[lid] != after.get(lid))
        out["relink_subnet_up_s"] = subnet.link_up(leaf, dead, timeout=30).seconds
        t = time.monotonic()
        state = subnet.snapshot()
        ring = route_balance(state, ring_flows([s.name for s in topo.gpu_servers], 8), "ring")
        out["ring_flows"], out["ring_busiest_spine_link"] = ring.routed, ring.busiest()
        first_pair = [f"{s.name} mlx5_0" for s in topo.gpu_servers if s.leaf_pair == topo.gpu_servers[0].leaf_pair]
        others = [f"{s.name} mlx5_0" for s in topo.gpu_servers if s.leaf_pair != topo.gpu_servers[0].leaf_pair]
        spread = route_balance(state, [(a, b) for a in first_pair for b in others], "leaf01 rail0 to all")
        lo, hi = spread.spread("up")
        out["leaf_to_all_uplink_flows_min"], out["leaf_to_all_uplink_flows_max"] = lo, hi
        out["all_to_all_flows"] = len(all_to_all_flows(state))
        out["analysis_s"] = time.monotonic() - t
        out["non_blocking_leaves"] = sum(c.non_blocking for c in leaf_capacity(state))
    return out


def main() -> None:
    args = parse_options(__doc__, topology="su-1024", runs=3)
    runs = []
    for i in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="fabric-bench-") as d:
            runs.append(one_run(args.topology, Path(d)))
        print(f"run {i + 1}: " + ", ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}"
                                          for k, v in runs[-1].items()))
    for key in ("subnet_up_s", "reroute_subnet_up_s", "reroute_lft_read_s", "snapshot_s"):
        values = [r[key] for r in runs]
        print(f"{key:22s} median {statistics.median(values):.3f}  min {min(values):.3f}  max {max(values):.3f}"
              "  (measured)")
    print("links run 4xHDR in ibsim; the 400G NDR rate is modelled")


if __name__ == "__main__":
    main()
