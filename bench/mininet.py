"""The Mininet backend against the netns backend, side by side (issue 17): a whole twin up and down,
the kernel memory its network takes, and how long the compute plane takes to converge after a
leaf-spine cable is cut (the fault call, then until a cross-leaf ping gets through).

    sudo .venv/bin/python -m bench --only mininet [--repeats 3]
    sudo .venv/bin/python -m bench.mininet --topology rack --repeats 1

Each twin holds the machine's netns lock (/tmp/clustertwin-netns.lock) while it is up.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from bench import procstat
from bench.report import report
from emulator import lifecycle
from emulator.rundir import RunDir

NETNS_LOCK = "/tmp/clustertwin-netns.lock"
GIB = 1024 ** 3
TARGETS = {"su-1024": {"up_s": 90.0, "down_s": 30.0}, "rack": {"up_s": 10.0}}


def _converge(run: RunDir, topology: str) -> tuple[float, float]:
    """Cut ib-leaf01 - ib-spine01: (seconds the fault call took, seconds until the first GPU server
    reaches the last one's compute address again, from the cut)."""
    from emulator.network.remote import RemoteNetwork

    manifest = run.load_manifest()
    gpus = [d for d in manifest.daemons if d.kind == "gpu_node"]
    src, dst = gpus[0].host, gpus[-1].addresses["compute"]
    ns = f"ct{manifest.slot}-{src}"
    net = RemoteNetwork(run.control_socket)
    t0 = time.monotonic()
    net.link_down("ib-leaf01", "ib-spine01")
    call = time.monotonic() - t0
    while subprocess.run(["ip", "netns", "exec", ns, "ping", "-n", "-q", "-c", "1", "-W", "1", dst],
                         capture_output=True).returncode != 0:
        if time.monotonic() - t0 > 60:
            raise RuntimeError(f"{topology}: {src} never reached {dst} after the cut")
    return call, time.monotonic() - t0


def one_run(topology: str, network: str) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp, open(NETNS_LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        run = RunDir(Path(tmp) / "twin")
        before = procstat.kernel_memory()
        t0 = time.monotonic()
        lifecycle.up(topology, run, network=network, timeout=300)
        up = time.monotonic() - t0
        log = (run.logs / "supervisor.log").read_text()
        built = float(log.split("network built in ")[1].split("s")[0])
        time.sleep(2.0)
        mem = (procstat.kernel_memory() - before) / GIB
        try:
            call, converged = _converge(run, topology)
        finally:
            t0 = time.monotonic()
            lifecycle.down(run)
            down = time.monotonic() - t0
    return {"up_s": up, "network_s": built, "down_s": down, "network_gib": mem,
            "fault_call_s": call, "converged_s": converged}


def rows(topology: str = "su-1024", repeats: int = 3) -> list[tuple[str, str, str, bool]]:
    """Per backend, the medians of `repeats` runs; the issue's targets apply to the Mininet backend."""
    out = []
    load = os.getloadavg()[0]
    for network in ("netns", "mininet"):
        runs = [one_run(topology, network) for _ in range(repeats)]
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        target = TARGETS.get(topology, {}) if network == "mininet" else {}
        note = f"(median of {repeats}, load {load:.2f})"
        for key, label in (("up_s", "twin up"), ("network_s", "of which the network"), ("down_s", "twin down"),
                           ("fault_call_s", "link-down call, routes installed"),
                           ("converged_s", "cut to first cross-leaf ping")):
            limit = target.get(key)
            out.append((f"{topology} --network {network}: {label}", f"{med[key]:.2f} s {note}",
                        f"<= {limit:g} s" if limit else "-", limit is None or med[key] <= limit))
        out.append((f"{topology} --network {network}: network kernel memory", f"{med['network_gib']:.2f} GiB",
                    "-", True))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--topology", default="su-1024")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    report(rows(args.topology, args.repeats))


if __name__ == "__main__":
    main()
