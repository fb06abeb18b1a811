"""Starting and stopping a twin from the command line or a test: `twin up`, `twin down`, `twin status`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from emulator.errors import UserError
from emulator.health import SERVING, check_all
from emulator.manifest import DaemonEntry, Manifest
from emulator.options import Options
from emulator.plan import parse_broker_url
from emulator.process import same_process, stop_process, stop_processes
from emulator.rundir import RunDir, RunDirError, log_tail, write_json_atomic
from emulator.service import ServiceError, optional_services, services
from emulator.store import StoreError, check_store
from emulator.topology import Topology, load_topology

NETWORKS = ("loopback", "netns", "mininet")   # mininet: the netns network, its nodes and links made by Mininet
DOWN_TIMEOUT_S = 15.0


class TwinError(UserError, RuntimeError):
    """A user-facing failure to start, stop or reach a twin."""


Progress = Callable[[int, int, str], None]  # (healthy, total, phase)


def up(topology: str, run: RunDir, *, timeout: float = 120.0, progress: Progress | None = None,
       **options: Any) -> Manifest:
    """Start a twin in `run` and wait until every daemon answers its health check.

    `options` are emulator.plan.Options' fields (network, name, store_url, clock_scale, ...) and one
    flag per optional service (fabric=True, ceph=True, lustre=True: see emulator/service.py)."""
    progress = progress or (lambda *_: None)
    topo = load_topology(topology)   # TopologyError names the file and field
    opts = make_options(topo, **options)
    _start_clean(run)
    write_json_atomic(run.config, {"topology_file": str(Path(topo.source).resolve()), "options": opts.to_dict()})

    log = open(run.logs / "supervisor.log", "ab")
    proc = subprocess.Popen([sys.executable, "-m", "emulator.supervisor", str(run.path)],
                            stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
    deadline = time.monotonic() + timeout
    progress(0, len(topo.gpu_servers), "starting supervisor")
    while not run.manifest.exists():
        _fail_if_supervisor_died(proc, run)
        if time.monotonic() > deadline:
            down(run)
            raise TwinError(f"supervisor wrote no manifest within {timeout:.0f}s; see {run.logs / 'supervisor.log'}")
        time.sleep(0.05)
    manifest = run.load_manifest()
    wait_healthy(run, manifest.daemons, deadline, progress, proc)
    return manifest


def make_options(topo: Topology, *, name: str | None = None, network: str = "loopback",
                 store_url: str | None = None, broker_url: str | None = None, clock_scale: float = 1.0,
                 telemetry_interval: float = 1.0, bandwidth_scale: float = 0.001, **rest: Any) -> Options:
    """`twin up`'s options checked, before anything starts: the twin's own here, each service's by its
    `check` (which may refuse them with a ServiceError)."""
    if network not in NETWORKS:
        raise TwinError(f"unknown network backend {network!r}; choose one of {', '.join(NETWORKS)}")
    builder = "netns"
    if network == "mininet":   # the same namespace network for every service; Mininet's API builds it
        from emulator.network.errors import NetworkError
        from emulator.network.mininet_import import load_mininet

        try:
            load_mininet()
        except NetworkError as e:
            raise TwinError(str(e)) from None
        network, builder = "netns", "mininet"
    if network == "netns" and os.geteuid() != 0:
        raise TwinError(f"--network {'mininet' if builder == 'mininet' else 'netns'} needs root "
                        "(it creates network namespaces)")
    if broker_url:
        try:
            parse_broker_url(broker_url)
        except ValueError as e:
            raise TwinError(str(e)) from None
    if clock_scale <= 0:
        raise TwinError(f"--clock-scale must be positive, got {clock_scale}")
    if not 0 <= bandwidth_scale <= 1:
        raise TwinError(f"--bandwidth-scale must be between 0 (unshaped) and 1, got {bandwidth_scale}")
    if telemetry_interval <= 0:
        raise TwinError(f"--telemetry-interval must be positive, got {telemetry_interval}")
    if store_url:
        try:
            check_store(store_url)
        except StoreError as e:
            raise TwinError(str(e)) from None
    flags = set(optional_services())
    service_options = _service_options(rest, flags)
    opts = Options(twin=name or topo.name, network=network, network_builder=builder, store_url=store_url,
                   broker_url=broker_url,
                   clock_epoch=time.time() if clock_scale != 1.0 else 0.0, clock_scale=clock_scale,
                   telemetry_interval=telemetry_interval, bandwidth_scale=bandwidth_scale,
                   services=tuple(s for s in optional_services() if rest.pop(s, False)),
                   service_options=service_options)
    for service in services().values():
        if service.check is not None:
            try:
                opts = service.check(opts, topo) or opts
            except ServiceError as e:
                raise TwinError(str(e)) from None
    return opts


def _service_options(rest: dict[str, Any], flags: set[str]) -> dict[str, dict[str, Any]]:
    """The services' own options out of `rest` (what is left is the service flags), each checked by its
    service's model; an option no service declares is refused by name."""
    found: dict[str, dict[str, Any]] = {}
    for service in services().values():
        fields = service.options.model_fields if service.options else {}
        given = {k: rest.pop(k) for k in list(rest) if k in fields}
        if given:
            try:
                service.options.model_validate(given)
            except ValidationError as e:
                bad = "; ".join(f"--{str(err['loc'][0]).replace('_', '-')} {err.get('input')!r}: {err['msg']}"
                                for err in e.errors())
                raise TwinError(bad) from None
            found[service.name] = given
    unknown = sorted(k for k in rest if k not in flags)
    if unknown:
        raise TwinError(f"unknown option(s) {', '.join(unknown)}; services: {', '.join(sorted(flags))}")
    return found


def _start_clean(run: RunDir) -> None:
    """A new twin starts from nothing: old state, logs and manifests of a previous run go."""
    pid = run.running_supervisor()
    if pid:
        raise TwinError(f"a twin is already running in {run.path} (supervisor pid {pid}); "
                        f"run `twin down --run-dir {run.path}` first")
    for old in (run.state, run.logs, run.broker, run.network, run.path / "lustre"):
        shutil.rmtree(old, ignore_errors=True)
    for old in (run.manifest, run.daemons, run.config, run.path / "failed.json"):
        old.unlink(missing_ok=True)
    run.create()


def _fail_if_supervisor_died(proc: subprocess.Popen, run: RunDir) -> None:
    if proc.poll() is None:
        return
    failed = run.path / "failed.json"
    why = run.read(failed)["error"] if failed.exists() else f"exit code {proc.returncode}"
    raise TwinError(f"twin failed to start: {why} (log: {run.logs / 'supervisor.log'})")


def wait_healthy(run: RunDir, daemons: list[DaemonEntry], deadline: float, progress: Progress,
                 proc: subprocess.Popen | None = None) -> None:
    pending = {d.health_address: d.name for d in daemons}
    total = len(pending)
    while pending:
        if proc is not None:
            _fail_if_supervisor_died(proc, run)
        _fail_if_daemons_gave_up(run, set(pending.values()))
        results = check_all(list(pending), timeout=1.0)
        for address, status in results.items():
            if status == SERVING:
                pending.pop(address)
        progress(total - len(pending), total, "daemons healthy")
        if not pending:
            return
        if time.monotonic() > deadline:
            names = sorted(pending.values())
            tail = log_tail(run.logs / f"{names[0]}.log")
            down(run)
            raise TwinError(f"{len(names)} daemon(s) not healthy in time: {', '.join(names[:8])}"
                            f"{' ...' if len(names) > 8 else ''}\nlast lines of {names[0]}'s log:\n{tail}")
        time.sleep(0.1)


def _fail_if_daemons_gave_up(run: RunDir, names: set[str]) -> None:
    """Stop waiting at once for a daemon the supervisor stopped restarting (it crash-looped)."""
    try:
        daemons = run.read(run.daemons).get("daemons", {})
    except RunDirError:
        return
    failed = sorted(n for n in names if daemons.get(n, {}).get("state") == "failed")
    if failed:
        reason = _last_error(run.logs / f"{failed[0]}.log")
        down(run)
        raise TwinError(f"{', '.join(failed)} kept crashing at start-up: {reason} "
                        f"(log: {run.logs / (failed[0] + '.log')})")


def _last_error(path: Path) -> str:
    lines = [ln.strip() for ln in log_tail(path, 40).splitlines() if ln.strip()]
    errors = [ln for ln in lines if "Error" in ln or "error" in ln]
    return (errors or lines or ["no log"])[-1]


def down(run: RunDir, timeout: float = DOWN_TIMEOUT_S) -> list[str]:
    """Stop the twin in `run`; returns what was stopped. Also cleans up after a crashed supervisor.

    Clients go before their servers: Slurm's jobs (they use the mounts), then the Lustre mounts
    (a FUSE client whose servers are gone cannot flush what was written: its unmount would hang),
    then the supervisor and its daemons, by the pids and cgroups recorded in the run directory."""
    stopped: list[str] = []
    for service in sorted(services().values(), key=lambda s: s.down_order):
        if service.before_down is not None:
            stopped += service.before_down(run)
    pid = run.running_supervisor()
    if pid:   # its session: the supervisor, the broker and the daemons it forked
        stop_process(pid, timeout, kill_group=True)
        stopped.append(f"supervisor {pid}")
    # Whatever outlived a supervisor that was itself killed: its pids are in daemons.json.
    try:
        status = run.read(run.daemons)
    except RunDirError:
        status = {}
    records = [(status.get("broker_pid"), status.get("broker_start"))]
    records += [(d.get("pid"), d.get("start")) for d in status.get("daemons", {}).values()]
    leftovers = [pid for pid, start in records if same_process(pid, start)]   # not a pid reused since
    stopped += [f"leftover {p}" for p in stop_processes(leftovers, 0)]
    if (run.network / "network.json").exists():   # a network a killed supervisor could not remove
        from emulator.network import clean_network
        removed = clean_network(run.network)
        if removed.get("namespaces"):
            stopped.append(f"{removed['namespaces']} network namespaces")
    run.forget_supervisor()
    return stopped


def status(run: RunDir) -> dict[str, Any]:
    """What runs in `run` and its health, in one document."""
    manifest = run.load_manifest()   # RunDirError says there is no twin
    supervisor = run.running_supervisor()
    try:
        live = run.read(run.daemons).get("daemons", {})
    except RunDirError:
        live = {}
    health = check_all([d.health_address for d in manifest.daemons], timeout=1.0) if supervisor else {}
    rows = []
    for d in manifest.daemons:
        state = live.get(d.name, {})
        rows.append({"name": d.name, "kind": d.kind, "grpc": d.grpc, "pid": state.get("pid", 0),
                     "state": state.get("state", "unknown") if supervisor else "stopped",
                     "restarts": state.get("restarts", 0), "health": health.get(d.health_address, "-")})
    return {"twin": manifest.twin, "topology": manifest.topology, "run_dir": str(run.path),
            "supervisor": supervisor, "broker": manifest.broker.url, "daemons": rows}
