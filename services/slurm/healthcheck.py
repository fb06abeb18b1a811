"""Slurm's HealthCheckProgram for the twin: drain a node whose GPU took a fatal Xid, resume it once healthy.

    python -m services.slurm.healthcheck --run-dir RUN_DIR [--node NAME]

slurmd runs it for its own node (`HealthCheckProgram`, every `HealthCheckInterval` seconds and at
start), through the wrapper `twin slurm up` writes (slurmd gives the program an almost empty
environment: the wrapper supplies SLURM_CONF, the run directory and the Python path). It asks the
node's GPU-server daemon (its gRPC address is in the run directory's manifest) for its GPUs and
active faults, as a site's NHC asks NVML/DCGM:

- an active Xid fault that DCGM rates FAIL (48 DBE, 74 NVLink, 79 fallen off the bus, 94/95 ECC,
  119/120 GSP, 140), or a GPU that is lost → `scontrol update state=drain reason="Xid 79 on GPU 3
  (GPU has fallen off the bus)"` (several: joined by "; "); application Xids and warnings do not drain;
- a healthy node drained by this check (its reason starts with "Xid") → `state=resume`; a node an
  operator drained for another reason is left alone.

A GPU server that does not answer (restarting, twin stopping) changes nothing: a health check must
not flap nodes over its own transport. It always exits 0 (slurmd only logs a failure) and logs
every action to stderr, which the wrapper appends to `log/healthcheck-NODE.log`.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import grpc

from clustertwin.v1 import gpu_node_pb2 as pb
from clustertwin.v1 import gpu_node_pb2_grpc as pb_grpc
from emulator import paging
from emulator.manifest import Manifest
from services.gpu_node.xid import XID_TABLE, Health

REASON_PREFIX = "Xid"
MIN_INTERVAL_S = 5
RUN_CPU_S = 0.25      # one check: Python, gRPC and protobuf start-up, two RPCs, one or two scontrol
CYCLE_ABOVE = 16      # nodes
CPU_SHARE = 0.25      # of the machine's cores the checks of every node may use together
QUIET = ("healthy", "still drained")
RPC_TIMEOUT_S = 5.0


def fatal(xid: int) -> bool:
    """A driver error after which the node must not run jobs: DCGM health FAIL."""
    info = XID_TABLE.get(xid)
    return info is not None and info.health is Health.FAIL


def problems(gpus: list[pb.GpuInfo], faults: list[pb.GpuFault]) -> list[str]:
    """The drain reason's parts, one per (GPU, Xid), in GPU order."""
    seen: dict[tuple[int, int], str] = {}
    for f in faults:
        if f.active and f.kind == pb.GPU_FAULT_KIND_XID and fatal(f.xid):
            seen[(f.gpu, f.xid)] = f"{REASON_PREFIX} {f.xid} on GPU {f.gpu} ({XID_TABLE[f.xid].meaning})"
    for g in gpus:
        if g.lost and not any(gpu == g.index for gpu, _ in seen):
            seen[(g.index, 79)] = f"{REASON_PREFIX} 79 on GPU {g.index} ({XID_TABLE[79].meaning})"
    return [seen[k] for k in sorted(seen)]


def ask_twin(address: str) -> list[str]:
    with grpc.insecure_channel(address) as channel:
        stub = pb_grpc.GpuNodeStub(channel)
        gpus = _every(stub.ListGpus, pb.GpuListGpusRequest(), "gpus")
        faults = _every(stub.ListFaults, pb.GpuListFaultsRequest(), "faults")
    return problems(gpus, faults)


def _every(rpc, request, field: str) -> list:
    """All pages of a List RPC (one call while the list fits a page)."""
    return paging.every_page(lambda r: rpc(r, timeout=RPC_TIMEOUT_S), request, field)


def node_state(node: str) -> tuple[str, str]:
    """(State, Reason) of `node` as slurmctld has them, e.g. ("IDLE+DRAIN", "Xid 79 on GPU 3 (...)")."""
    out = subprocess.run(["scontrol", "-o", "show", "node", node], capture_output=True, text=True,
                         timeout=20, check=True).stdout
    state = re.search(r"\bState=(\S+)", out)
    reason = re.search(r"\bReason=(.*?)(?: \[[^\]]*\])?\s*$", out)
    return (state.group(1) if state else "", reason.group(1) if reason else "")


def scontrol_update(node: str, *args: str) -> None:
    subprocess.run(["scontrol", "update", f"nodename={node}", *args], capture_output=True, text=True,
                   timeout=20, check=True)


def check(node: str, address: str) -> str:
    """Compare the twin's view of `node` with Slurm's and act; returns what was done."""
    try:
        found = ask_twin(address)
    except grpc.RpcError as e:
        return f"GPU server at {address} did not answer ({e.code().name}): nothing changed"
    state, reason = node_state(node)
    drained = "DRAIN" in state.split("+")
    if found:
        wanted = "; ".join(found)
        if drained and reason == wanted:
            return f"still drained: {wanted}"
        scontrol_update(node, "state=drain", f"reason={wanted}")
        return f"drained: {wanted}"
    if drained and reason.startswith(REASON_PREFIX):
        scontrol_update(node, "state=resume")
        return f"resumed (was: {reason})"
    return f"healthy ({state})"


def parent() -> str:
    """Who ran this check (`slurmd 1234` when slurmd did): the proof that slurmd runs it."""
    ppid = os.getppid()
    try:
        return f"{Path(f'/proc/{ppid}/comm').read_text().strip()} {ppid}"
    except OSError:
        return f"pid {ppid}"


def address_of(run_dir: Path, node: str) -> str:
    for d in Manifest.load(run_dir / "manifest.json").daemons_of("gpu_node"):
        if d.name == node:
            return d.grpc
    raise SystemExit(f"healthcheck: no GPU server {node!r} in {run_dir / 'manifest.json'}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m services.slurm.healthcheck", description=__doc__.splitlines()[0])
    parser.add_argument("--run-dir", type=Path, required=True, help="the twin's run directory")
    parser.add_argument("--node", default=os.environ.get("SLURMD_NODENAME", ""),
                        help="the Slurm node (= GPU server) to check; default $SLURMD_NODENAME")
    args = parser.parse_args(argv)
    if not args.node:
        parser.error("no --node and no SLURMD_NODENAME")
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
    try:
        done = check(args.node, address_of(args.run_dir, args.node))
    except (OSError, ValueError, subprocess.SubprocessError) as e:
        done = f"health check failed: {e} {(getattr(e, 'stderr', '') or '').strip()}"
    if not done.startswith(QUIET):   # every 5 s on every node: only changes and failures are news
        print(f"{stamp} {args.node}: {done} (run by {parent()})", file=sys.stderr)
    return 0


def auto_interval(nodes: int, cpus: int | None = None) -> int:
    """HealthCheckInterval for `nodes` slurmd on this machine: 5 s (a fatal Xid drains within
    seconds) unless running a check on every node that often would take more than a quarter of
    the cores (su-1024's 128 nodes on 2 cores: 64 s; on 16 cores: 8 s)."""
    cpus = cpus or os.cpu_count() or 1
    return max(MIN_INTERVAL_S, round(nodes * RUN_CPU_S / (cpus * CPU_SHARE)))


def install(slurm_dir: Path, run_dir: Path, interval_s: int, nodes: int) -> dict[str, str]:
    """Write the wrapper slurmd runs (`slurm_dir/healthcheck.sh`) and return the slurm.conf lines
    that make slurmd run it on every node, whatever the node's state, every `interval_s` seconds.

    slurmd execs HealthCheckProgram without arguments and with only SLURMD_NODENAME (and a few
    SLURM_ variables) set, so the wrapper carries SLURM_CONF, PATH, the Python that has this
    project and the run directory. It does nothing until `enable()`: every slurmd also runs the
    check as it starts, and 128 Python start-ups at once (su-1024) would starve the daemons
    registering on a small machine. Beyond CYCLE_ABOVE nodes slurmctld spreads the checks over
    the interval (`CYCLE`) instead of running all at once."""
    repo = Path(__file__).resolve().parents[2]
    wrapper = slurm_dir / "healthcheck.sh"
    q = shlex.quote
    wrapper.write_text(
        "#!/bin/sh\n"
        "# Generated by `twin slurm up` (services/slurm/healthcheck.py): slurmd's HealthCheckProgram.\n"
        f"export SLURM_CONF={q(str(slurm_dir / 'slurm.conf'))}\n"
        f"[ -e {q(str(enabled_flag(slurm_dir)))} ] || exit 0\n"
        "export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n"
        f"export PYTHONPATH={q(str(repo))}\n"
        f"exec {q(sys.executable)} -m services.slurm.healthcheck --run-dir {q(str(run_dir))} "
        f"--node \"$SLURMD_NODENAME\" 2>>{q(str(slurm_dir / 'log'))}/healthcheck-\"$SLURMD_NODENAME\".log\n")
    wrapper.chmod(0o755)
    return {"HealthCheckProgram": str(wrapper), "HealthCheckInterval": str(interval_s),
            "HealthCheckNodeState": "ANY,CYCLE" if nodes > CYCLE_ABOVE else "ANY"}


def enabled_flag(slurm_dir: Path) -> Path:
    return slurm_dir / "healthcheck.enabled"


def enable(slurm_dir: Path) -> None:
    """Let the checks run (once every node has registered)."""
    enabled_flag(slurm_dir).touch()


if __name__ == "__main__":
    sys.exit(main())
