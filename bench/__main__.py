"""Run every benchmark and print its figures against the issue's targets.

    python -m bench [--repeats N] [--only loopback|netns|fabric|s3|train|lustre]     (`make bench`)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from bench import procstat
from bench.report import report
from bench.rpc_latency import measure_latency
from emulator import lifecycle
from emulator.client import Twin
from emulator.rundir import RunDir

GIB = 1024**3


def twin_pids(run: RunDir) -> dict[str, list[int]]:
    status = json.loads(run.daemons.read_text())
    return {"daemons": [d["pid"] for d in status["daemons"].values() if d["pid"]],
            "supervisor": [status["supervisor"]], "broker": [status["broker_pid"]] if status["broker_pid"] else []}


def bench_su1024(repeats: int) -> dict[str, float]:
    ups, downs, pss, cpu = [], [], [], []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as tmp:
            run = RunDir(Path(tmp) / "su")
            t0 = time.monotonic()
            lifecycle.up("su-1024", run, timeout=120)
            ups.append(time.monotonic() - t0)
            time.sleep(3.0)   # let start-up settle before measuring steady state
            pids = twin_pids(run)
            pss.append(sum(procstat.pss_bytes(p) for p in pids["daemons"]) / GIB)
            everything = pids["daemons"] + pids["supervisor"] + pids["broker"]
            c0, w0 = sum(procstat.cpu_seconds(p) for p in everything), time.monotonic()
            time.sleep(10.0)
            cpu.append((sum(procstat.cpu_seconds(p) for p in everything) - c0) / (time.monotonic() - w0))
            t0 = time.monotonic()
            lifecycle.down(run)
            downs.append(time.monotonic() - t0)
    return {"up_s": statistics.median(ups), "down_s": statistics.median(downs),
            "pss_gib": statistics.median(pss), "telemetry_cores": statistics.median(cpu)}


def settle(max_wait: float = 30.0) -> None:
    """Wait (bounded) until the 1-minute load average drops below 1, as after a reboot of a test box."""
    deadline = time.monotonic() + max_wait
    while os.getloadavg()[0] > 1.0 and time.monotonic() < deadline:
        time.sleep(1.0)


def bench_su1024_netns(repeats: int) -> dict[str, float]:
    """The full su-1024 on the namespace network: every plane, every link, every daemon in its host."""
    from emulator.network.remote import RemoteNetwork

    ups, downs, nets, mem, reroute = [], [], [], [], []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as tmp:
            run = RunDir(Path(tmp) / "su")
            before = procstat.kernel_memory()
            t0 = time.monotonic()
            lifecycle.up("su-1024", run, network="netns", timeout=180)
            ups.append(time.monotonic() - t0)
            log = (run.logs / "supervisor.log").read_text()
            nets.append(float(log.split("network built in ")[1].split("s")[0]))
            time.sleep(3.0)
            mem.append((procstat.kernel_memory() - before) / GIB)
            net = RemoteNetwork(run.control_socket)   # as `twin net fault` does
            t0 = time.monotonic()
            net.link_down("ib-leaf01", "ib-spine01")
            reroute.append(time.monotonic() - t0)
            t0 = time.monotonic()
            lifecycle.down(run)
            downs.append(time.monotonic() - t0)
    return {"up_s": statistics.median(ups), "network_s": statistics.median(nets), "down_s": statistics.median(downs),
            "network_gib": statistics.median(mem), "reroute_s": statistics.median(reroute)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", choices=["loopback", "netns", "fabric", "s3", "train", "lustre", "timings",
                                           "mininet", "lustre-posix", "nvml", "train-real"],
                        help="Run one group of benchmarks.")
    args = parser.parse_args()
    if args.only in (None, "loopback"):
        report(loopback_rows(args.repeats))
    if args.only in (None, "netns"):
        if os.geteuid() != 0:
            print("su-1024 on the netns network: skipped (needs root)")
        else:
            report(netns_rows(args.repeats))
    if args.only in (None, "fabric"):
        report(fabric_rows(args.repeats))
    if args.only in (None, "mininet"):
        if os.geteuid() != 0:
            print("su-1024, Mininet backend against netns: skipped (needs root)")
        else:
            from bench.mininet import rows as mininet_rows
            print("su-1024: the Mininet backend against the netns backend:")
            report(mininet_rows("su-1024", args.repeats))
    if args.only in (None, "s3"):
        from bench.s3_vs_moto import run as s3_rows
        report(s3_rows(repeats=args.repeats))
    if args.only in (None, "train"):
        from bench.train_drill import measure
        from bench.train_drill import rows as train_rows
        print("su-1024 Slurm, 1024-GPU training drill, report (one run):")
        report(train_rows(measure()))
    if args.only in (None, "lustre"):
        report(lustre_rows())
    if args.only in (None, "lustre-posix"):
        if os.geteuid() != 0:
            print("CPython's file-system tests in the Lustre mount: skipped (needs root)")
        else:
            from bench import lustre_posix
            print("CPython's file-system tests, local disk and the Lustre mount (rack) in one run:")
            report(lustre_posix.rows(*lustre_posix.run()))
    if args.only in (None, "nvml"):
        from bench.nvml import rows as nvml_rows
        report(nvml_rows(args.repeats))
    if args.only in (None, "train-real"):
        if os.geteuid() != 0:
            print("real torchrun job on the netns rack: skipped (needs root)")
        else:
            from bench import train_real
            print("twin train --real on rack (netns, Lustre), one run each:")
            r = train_real.measure()
            report(train_real.rows(r))
            print(f"  (load average {r['load'][0]:.1f} before, {r['load'][1]:.1f} after)")
    if args.only in (None, "timings"):
        from bench.timings import rows as timing_rows
        print(f"Times the tests no longer assert (bench/timings.py), {args.repeats} runs (medians):")
        report(timing_rows(args.repeats))


def lustre_rows() -> list[tuple[str, str, str, bool]]:
    """Lustre through the FUSE mount vs the local disk, `ls -l`, staging (bench/lustre_fuse.py; root)."""
    from bench import lustre_fuse

    if os.geteuid() != 0:
        return [("lustre FUSE bench", "skipped (needs root)", "-", True)]
    print("Lustre (rack, FUSE mount, stripe count 4, NVMe model off; staging on mini --ceph --lustre):")
    return lustre_fuse.rows(lustre_fuse.run())


def fabric_rows(repeats: int) -> list[tuple[str, str, str, bool]]:
    """The su-1024 InfiniBand fabric under the real OpenSM, and the collective model's speed."""
    from bench.fabric_su1024 import one_run
    from services.fabric.collectives import estimate

    print(f"su-1024 fabric (ibsim + OpenSM ftree), {repeats} runs (medians):")
    runs = []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as tmp:
            runs.append(one_run("su-1024", Path(tmp)))
    med = {k: statistics.median(r[k] for r in runs) for k in ("subnet_up_s", "snapshot_s", "reroute_lft_read_s")}
    t0, n = time.perf_counter(), 20000
    for i in range(n):
        estimate("all_reduce", 1 << (10 + i % 25), 8 << (i % 8))
    rate = n / (time.perf_counter() - t0)
    up = med["subnet_up_s"] + med["snapshot_s"]
    from bench.fabric_service import measure
    svc = measure(requests=200, faults=max(3, repeats))
    return [
        ("discovered, routed and read back", f"{up:.2f} s (SUBNET UP {med['subnet_up_s']:.2f} s)", "<= 5 s", up <= 5),
        ("leaf-spine link fault -> new LFT read back", f"{med['reroute_lft_read_s']:.2f} s", "<= 2 s",
         med["reroute_lft_read_s"] <= 2),
        ("collective estimates, one core", f"{rate:,.0f} /s", ">= 10,000 /s", rate >= 10000),
        ("UFM GET /resources/ports, 1024 HCA ports", f"p99 {svc['ufm_ports_p99_ms']:.1f} ms (p50 "
         f"{svc['ufm_ports_p50_ms']:.1f}, first {svc['ufm_ports_first_ms']:.0f})", "p99 <= 100 ms",
         svc["ufm_ports_p99_ms"] <= 100),
        ("link fault -> new route in the manager's answers", f"{svc['fault_to_new_route_s']:.2f} s", "<= 2 s",
         svc["fault_to_new_route_s"] <= 2),
    ]


def netns_rows(repeats: int) -> list[tuple[str, str, str, bool]]:
    print(f"su-1024, netns network, {repeats} runs (medians):")
    n = bench_su1024_netns(repeats)
    return [
        ("up and healthy (network + 128 daemons)", f"{n['up_s']:.1f} s (network {n['network_s']:.1f} s)", "<= 90 s",
         n["up_s"] <= 90),
        ("down (daemons, broker, every namespace)", f"{n['down_s']:.1f} s", "<= 30 s", n["down_s"] <= 30),
        ("kernel memory of the network (slab+percpu)", f"{n['network_gib']:.2f} GiB", "<= 3 GiB",
         n["network_gib"] <= 3),
        ("leaf-spine link down -> routes updated", f"{n['reroute_s']:.2f} s", "<= 1 s", n["reroute_s"] <= 1),
    ]


def loopback_rows(repeats: int) -> list[tuple[str, str, str, bool]]:
    print(f"su-1024, loopback, {repeats} runs (medians):")
    su = bench_su1024(repeats)
    rows = [
        ("up and healthy (128 GPU-server daemons)", f"{su['up_s']:.1f} s", "<= 30 s", su["up_s"] <= 30),
        ("down", f"{su['down_s']:.1f} s", "<= 10 s", su["down_s"] <= 10),
        ("daemons' memory, sum of PSS", f"{su['pss_gib']:.2f} GiB", "<= 4 GiB", su["pss_gib"] <= 4),
        ("CPU with 1024 GPUs' telemetry at 1 Hz", f"{su['telemetry_cores']:.2f} cores", "<= 0.5 core",
         su["telemetry_cores"] <= 0.5),
    ]
    settle()   # the su-1024 runs leave the kernel busy for a while; latency is measured on a quiet machine
    with tempfile.TemporaryDirectory() as tmp, Twin.up("mini", run_dir=Path(tmp) / "mini") as twin:
        lat = measure_latency(twin.daemon("gpu001").grpc, rate=500, seconds=10.0, repeats=repeats)
    rows.append(("GetGpu p99 at 500 req/s, one daemon", f"{lat['p99_ms']:.2f} ms (p50 {lat['p50_ms']:.2f} ms, "
                 f"{lat['achieved_rps']:.0f} req/s)", "<= 5 ms", lat["p99_ms"] <= 5))
    return rows


if __name__ == "__main__":
    main()
