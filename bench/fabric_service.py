"""The fabric manager as its users meet it, on `twin up su-1024 --fabric` (1024 HCAs, 48
switches): UFM's `GET /resources/ports?sys_type=Computer` latency, and how long a leaf-spine link
fault takes to show in the manager's answers (SetPortState until GetRoute routes around it).

    sudo .venv/bin/python -m bench.fabric_service [--requests 200] [--faults 3]
"""

from __future__ import annotations

import base64
import json
import statistics
import tempfile
import time
import urllib.request
from pathlib import Path

from bench.options import parse_options, print_figures
from clustertwin.v1 import fabric_pb2 as pb
from emulator.client import Twin
from services.fabric.manifest import fabric_manager


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


def measure(requests: int = 200, faults: int = 3) -> dict[str, float]:
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp, Twin.up("su-1024", run_dir=Path(tmp) / "su", fabric=True,
                                                       timeout=180) as twin:
        entry = fabric_manager(twin.manifest)
        token = base64.b64encode(f"{entry.ufm_user}:{entry.ufm_password}".encode()).decode()
        req = urllib.request.Request(entry.ufm + "/resources/ports?sys_type=Computer",
                                     headers={"Authorization": f"Basic {token}"})
        times = []
        for _ in range(requests + 1):
            t0 = time.perf_counter()
            with urllib.request.urlopen(req, timeout=30) as reply:
                ports = json.loads(reply.read())
            times.append(time.perf_counter() - t0)
        assert len(ports) == 1024, len(ports)
        out["ufm_ports_first_ms"] = times[0] * 1e3
        out["ufm_ports_p50_ms"] = statistics.median(times[1:]) * 1e3
        out["ufm_ports_p99_ms"] = percentile(times[1:], 0.99) * 1e3
        fabric = twin.fabric()
        route_req = pb.FabricGetRouteRequest(src=pb.FabricEndpoint(node="gpu001 mlx5_0"),
                                             dst=pb.FabricEndpoint(node="gpu128 mlx5_0"))
        reroutes, sweeps = [], []
        for _ in range(faults):
            time.sleep(5.0)   # faults spaced as in life: the read-back behind the last change has finished
            before = fabric.call("GetRoute", src=route_req.src, dst=route_req.dst)
            leaf, uplink = before.hops[0].switch_name, before.hops[0].out_port
            t0 = time.perf_counter()
            r = fabric.call("SetPortState", system=leaf, port=uplink, enabled=False)
            after = fabric.call("GetRoute", src=route_req.src, dst=route_req.dst)
            reroutes.append(time.perf_counter() - t0)
            sweeps.append(r.resweep_seconds)
            assert after.hops[0].out_port != uplink
            fabric.call("SetPortState", system=leaf, port=uplink, enabled=True)
        out["fault_to_new_route_s"] = statistics.median(reroutes)
        out["fault_opensm_resweep_s"] = statistics.median(sweeps)
        fabric.close()
    return out


def main() -> None:
    args = parse_options(__doc__, requests=200, faults=3)
    print_figures(measure(args.requests, args.faults))


if __name__ == "__main__":
    main()
