"""Build and tear down the su-1024 network and print the figures (a program, not a test).

    sudo .venv/bin/python -m bench.network_su1024 [--topology su-1024] [--bandwidth-scale 0.001]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time

from emulator.network import build_network, clean_network
from emulator.network.kernel import netns_list
from emulator.topology import load_topology


def mem_used_mib() -> float:
    info = dict(line.split(":", 1) for line in open("/proc/meminfo"))
    kib = lambda k: int(info[k].split()[0])  # noqa: E731
    return (kib("MemTotal") - kib("MemAvailable")) / 1024


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--topology", default="su-1024")
    ap.add_argument("--bandwidth-scale", type=float, default=None)
    ap.add_argument("--prefix", default=f"bn{os.getpid() % 100000}")
    args = ap.parse_args()
    topo = load_topology(args.topology)
    state = tempfile.mkdtemp(prefix="net-bench-")
    mem0 = mem_used_mib()
    t0 = time.monotonic()
    net = build_network(topo, prefix=args.prefix, state_dir=state, bandwidth_scale=args.bandwidth_scale)
    build = time.monotonic() - t0
    mem1 = mem_used_mib()
    try:
        servers = [s.name for s in topo.gpu_servers]
        first, last = servers[0], servers[-1]
        ping = net.exec(first, ["ping", "-c", "1", "-W", "2", net.address(last, "compute")])
        ping_oob = net.exec(first, ["ping", "-c", "1", "-W", "2", net.address(last, "oob")])
        ping_storage = net.exec(last, ["ping", "-c", "1", "-W", "2", net.address("oss24", "storage")])
        t1 = time.monotonic()
        fault = net.link_down("ib-leaf01", "ib-spine01", index=0)
        link_down = time.monotonic() - t1
        t1 = time.monotonic()
        net.clear(fault.id)
        link_up = time.monotonic() - t1
        t1 = time.monotonic()
        net.switch_down("ib-leaf01")
        leaf_down = time.monotonic() - t1
        net.switch_up("ib-leaf01")
    finally:
        t2 = time.monotonic()
        clean_network(state)
        teardown = time.monotonic() - t2
    t3 = time.monotonic()
    while mem_used_mib() > mem0 + 50 and time.monotonic() - t3 < 30:
        time.sleep(0.2)  # the kernel frees namespaces asynchronously
    print(json.dumps({
        "topology": args.topology, "bandwidth_scale": args.bandwidth_scale,
        "namespaces": len(net.namespaces), "veth_pairs": len(net.plan.wires),
        "build_s": round(build, 2), "build_split_s": {k: round(v, 2) for k, v in net.timings.items()},
        "memory_mib": round(mem1 - mem0), "first_to_last_ping_ok": ping.returncode == 0,
        "oob_ping_ok": ping_oob.returncode == 0, "storage_ping_ok": ping_storage.returncode == 0,
        "link_down_to_routes_s": round(link_down, 3), "link_up_s": round(link_up, 3),
        "leaf_down_to_routes_s": round(leaf_down, 3),
        "teardown_s": round(teardown, 2), "kernel_freed_s": round(time.monotonic() - t3, 2),
        "left": [n for n in netns_list() if n.startswith(args.prefix + "-")],
    }, indent=1))


if __name__ == "__main__":
    main()
