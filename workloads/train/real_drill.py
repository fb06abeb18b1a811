"""A drill of the real job (`workload: {real: true}`): `twin drill run topologies/drills/real_*.yaml`.

The model's drills (workloads/drill/) step through modelled time; this one runs `twin train --real`
(real torchrun ranks) on a `--network netns` twin, raises its fault at a step (from rank 0's
progress): a server cut off (reconnected when the job has ended), an Xid on the GPU of one of a
server's ranks (the server rebooted when the job has ended: only that brings back a GPU lost to Xid
79), or a switch powered off (back on when the job has ended); then it checks what the real job did.
Not deterministic: step times, the step the fault
lands after (the fault is raised once rank 0 has reported the step; the others may be a step
ahead), the time to resume, the measured all-reduce. Deterministic: which ranks restart, from
which checkpoint (the last one written before the group restarted: the group feels the fault at a
rank's next health check or at gloo's timeout, and a checkpoint due before that is still whole), the
group size after it.

File: name, description, topology, twin {lustre, ceph}, workload {real: true, gpus, gpus_per_server,
steps, checkpoint_every, gloo_timeout_s, rdzv_join_timeout_s}, storage {dataset: {objects, object_kib, bucket, prefix,
workers}} (optional: made in the S3 gateway, staged into the Lustre mount by `twin stage`'s job and
verified before the job starts, then read by the ranks as their inputs), schedule [{name, at:
{step}, fault: cut, host}, {name, at: {step}, fault: xid, host, local_rank, xid} or {name, at: {step},
fault: switch-down, switch}], expect [{job_completes}, {ranks_started: [..]},
{resumed_from_last_checkpoint_before_fault}, {checkpoints_on_lustre}, {leases_released_but_the_cut_servers},
{rank_stopped_on_gpu_lost}, {dataset_staged_and_read}, {rails_after_fault: [..]}].
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from emulator.errors import BadInput
from workloads.drill.dataset import stage_user
from workloads.drill.spec import dataset_spec
from workloads.train.real_cli import run_real
from workloads.train.real_launch import RealOptions

EXPECTATIONS = ("job_completes", "ranks_started", "resumed_from_last_checkpoint_before_fault",
                "checkpoints_on_lustre", "leases_released_but_the_cut_servers", "rank_stopped_on_gpu_lost",
                "dataset_staged_and_read", "rails_after_fault")
WORKLOAD_KEYS = {"real", "gpus", "gpus_per_server", "steps", "checkpoint_every", "gloo_timeout_s",
                 "rdzv_join_timeout_s"}


def is_real(path: Path) -> bool:
    try:
        doc = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError):
        return False  # the drill loader reports it
    return isinstance(doc, dict) and isinstance(doc.get("workload"), dict) and doc["workload"].get("real") is True


def parse(path: Path) -> dict[str, Any]:
    doc = yaml.safe_load(Path(path).read_text())
    wl = doc.get("workload") or {}
    st = doc.get("storage")
    if st is not None:   # the dataset the ranks read, staged from the S3 gateway into the Lustre mount
        if not isinstance(st, dict) or set(st) != {"dataset"}:
            raise BadInput(f"{path}: a real drill's storage is {{dataset: {{...}}}}")
        st["dataset"] = dataset_spec(st["dataset"], doc.get("twin") or {}, str(path))
    extra = set(wl) - WORKLOAD_KEYS
    if extra:
        raise BadInput(f"{path}: workload keys {', '.join(sorted(extra))} unknown; "
                       f"known: {', '.join(sorted(WORKLOAD_KEYS))}")
    for key in ("gloo_timeout_s", "rdzv_join_timeout_s"):
        v = wl.get(key)
        if key in wl and (isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0):
            raise BadInput(f"{path}: workload {key}: seconds above 0, not {v!r}")
    for i, f in enumerate(doc.get("schedule") or []):
        at_step = isinstance((f.get("at") or {}).get("step"), int)
        xid = f.get("fault") == "xid" and isinstance(f.get("local_rank"), int) and isinstance(f.get("xid"), int)
        on_host = bool(f.get("host")) and (f.get("fault") == "cut" or xid)
        switch = f.get("fault") == "switch-down" and isinstance(f.get("switch"), str)
        if not at_step or not (on_host or switch):
            raise BadInput(f"{path}: schedule[{i}]: a real drill's fault is "
                           "{fault: cut, host: gpuNNN, at: {step: N}}, "
                           "{fault: xid, host: gpuNNN, local_rank: R, xid: 79, at: {step: N}} or "
                           "{fault: switch-down, switch: ib-leafNN, at: {step: N}}")
    for x in doc.get("expect") or []:
        if not isinstance(x, dict) or len(x) != 1 or next(iter(x)) not in EXPECTATIONS:
            raise BadInput(f"{path}: expectation {x!r}: one of {', '.join(EXPECTATIONS)}")
    return doc


class Injector:
    """Raises the drill's fault once rank 0 reports its step: `host` cut off, or an Xid on the GPU the
    job leased for `host`'s local rank `local_rank`. `heal`, when the job has ended (not earlier: a
    cut server's agent, still retrying the rendezvous store for 60 s, would rejoin and restart the
    group a second time, which makes the drill's group sizes depend on timing), reconnects the
    server or reboots it (a GPU lost to Xid 79 comes back only so)."""

    def __init__(self, twin: Any, fault: dict[str, Any] | None, log: Any) -> None:
        self.twin, self.fault, self.log = twin, fault, log
        self.raised_t: float | None = None
        self.healed = False

    def __call__(self, job: Any, evs: list[dict[str, Any]]) -> None:
        f = self.fault
        if f is None or self.raised_t is not None:
            return
        if not any(e["kind"] == "step" and e["step"] >= f["at"]["step"] for e in evs):
            return
        if f["fault"] == "cut":
            self.twin.network().cut_off(f["host"])
            what = f"{f['host']} cut off"
        elif f["fault"] == "switch-down":
            self.twin.network().switch_down(f["switch"])
            what = f"{f['switch']} powered off"
        else:
            node = self.twin.gpu_node(f["host"])
            lease = next(x for x in node.leases() if x.job_id == job.opts.job_id)
            gpu = lease.devices[f["local_rank"]].gpu
            node.inject_xid(gpu, f["xid"])
            what = f"Xid {f['xid']} on {f['host']} GPU {gpu} (local rank {f['local_rank']}'s)"
        self.raised_t = time.time()
        self.log(f"{f['name']}: {what} after step {f['at']['step']}")

    def heal(self) -> None:
        if self.raised_t is None or self.healed:
            return
        self.healed = True
        if self.fault["fault"] == "cut":
            self.twin.network().reconnect(self.fault["host"])
            self.log(f"{self.fault['host']} reconnected")
        elif self.fault["fault"] == "switch-down":
            self.twin.network().switch_up(self.fault["switch"])
            self.log(f"{self.fault['switch']} powered on")
        else:
            self.twin.gpu_node(self.fault["host"]).reboot()
            self.log(f"{self.fault['host']} rebooted (its lost GPU is back)")


def left_leases(twin: Any, job_id: str) -> list[str]:
    """Leases of the job still held once every server is reconnected (the job could not release a
    cut-off server's): released now, so the next run finds the GPUs free."""
    left = []
    for s in sorted(twin.gpu_nodes):
        for lease in twin.gpu_node(s).leases():
            if lease.job_id == job_id:
                left.append(f"{s} {lease.id}")
                twin.gpu_node(s).release(lease.id)
    return left


def check(expect: list[dict[str, Any]], r: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for x in expect:
        key, want = next(iter(x.items()))
        if key == "job_completes":
            got, why = r["status"] == "completed", r["outcome"]
        elif key == "ranks_started":
            got, why = r["ranks_started"] == want, f"ranks started per attempt: {r['ranks_started']}"
        elif key == "resumed_from_last_checkpoint_before_fault":
            # the group feels a fault at a rank's next health check or at gloo's timeout, so the checkpoint
            # due in between may still be written (whole: every rank took that step): the restart takes the
            # last one written before it
            fault_t = r["fault"]["t"] if r.get("fault") else None
            restart_t = next((a["t"] for a in r["attempts"] if fault_t is not None and a["t"] > fault_t), None)
            before = [c for c, t in r["checkpoints_at"] if restart_t is not None and t <= restart_t]
            got = bool(before) and r.get("resumed_from_step") == before[-1]
            why = (f"resumed from {r.get('resumed_from_step')}; checkpoints before the restart: {before} "
                   f"(up to the fault: {[c for c, t in r['checkpoints_at'] if fault_t and t <= fault_t]})")
        elif key == "rank_stopped_on_gpu_lost":
            lost = [f"rank {e['rank']} ({e['server']} local rank {e['local_rank']}): {e['error']}"
                    for e in r["gpu_lost"]]
            host = r["fault"]["target"].split()[0] if r.get("fault") else None
            got = bool(lost) and all("GPU_IS_LOST" in e["error"] and e["server"] == host for e in r["gpu_lost"])
            why = "; ".join(lost) or "no rank reported a lost GPU"
        elif key == "dataset_staged_and_read":
            st = r.get("stage") or {}
            got = bool(st) and st["verified_after_stage"] == st["objects"] == r.get("dataset_files")
            why = (f"staged {st['copied']} of {st['objects']} objects from {st['source']}, "
                   f"{st['verified_after_stage']} verified; the ranks read {r.get('dataset_files')} files"
                   if st else "no dataset staged")
        elif key == "rails_after_fault":
            last = r.get("allreduce_last") or {}
            got = last.get("channels") == want
            why = f"the last attempt's channels: {last.get('channels')} ({last.get('rails_up')} rails up)"
        elif key == "checkpoints_on_lustre":
            got, why = r["checkpoint_storage"].startswith("lustre"), r["checkpoint_storage"]
        else:  # the job releases every lease it can reach; a cut-off server's waits for its reconnection
            cut = {f"{r['fault']['target']}"} if r.get("fault") else set()
            held = [x for x in r["leases_left"] if x.split()[0] not in cut]
            got = not held and set(r["not_released"]) <= cut
            why = (f"not released by the job: {sorted(r['not_released']) or 'none'}; "
                   f"held after it: {r['leases_left'] or 'none'}")
        out.append({"expectation": key, "value": want,
                    "passed": got if key in ("ranks_started", "rails_after_fault") else got == want,
                    "why": why})
    return out


def run(path: Path, out: Path, run_dir: Path | None, log: Any) -> dict[str, Any]:
    from emulator.client import Twin

    doc = parse(path)
    wl, twin_opts = doc["workload"], doc.get("twin") or {}
    out.mkdir(parents=True, exist_ok=True)
    owned = run_dir is None
    twin = (Twin.up(doc["topology"], run_dir=out / "twin", network="netns", lustre=bool(twin_opts.get("lustre")),
                    ceph=bool(twin_opts.get("ceph")), timeout=120) if owned else Twin.connect(run_dir))
    try:
        return _drill(twin, doc, wl, out, owned, log)
    finally:
        if owned:
            twin.down()


def _stage(twin: Any, name: str, ds: dict[str, Any], mount: Path, log: Any) -> dict[str, Any]:
    """The drill's dataset staged into the Lustre mount (4 stripes), from the client node's namespace: the
    gateway and Lustre are on the storage segment, which the machine's namespace does not reach."""
    from services.lustre.client.mount import client_host

    creds = stage_user(name, twin)
    args = {"run_dir": str(twin.run.path), "netns": client_host(twin.manifest)[1], "name": name, "dataset": ds,
            "stripe_count": 4, "seed": 0, "mount": str(mount), "key": creds[0], "secret": creds[1]}
    p = subprocess.run([sys.executable, "-m", "workloads.drill.dataset", json.dumps(args)], capture_output=True,
                       text=True, timeout=600)
    for line in p.stderr.splitlines():
        log(line)
    if p.returncode != 0:
        raise RuntimeError(f"staging the dataset failed: {p.stderr.strip()[-500:]}")
    return json.loads(p.stdout.splitlines()[-1])


def check_target(twin: Any, fault: dict[str, Any] | None) -> None:
    """The fault's server or switch is one of this twin's: refused before anything starts."""
    from emulator.network import Network

    if fault is None:
        return
    if fault["fault"] == "switch-down":
        switches = Network.attach(twin.run.path / "network").switches
        if fault["switch"] not in switches:
            raise BadInput(f"schedule: no switch {fault['switch']!r} in this twin (switches are e.g. "
                           f"{', '.join(switches[:4])})")
    elif fault["host"] not in twin.gpu_nodes:
        raise BadInput(f"schedule: no GPU server {fault['host']!r} in this twin ({', '.join(sorted(twin.gpu_nodes))})")


def options(name: str, wl: dict[str, Any], dataset: str) -> RealOptions:
    """The job a drill's `workload` runs (what it leaves out, RealOptions' defaults)."""
    per = int(wl.get("gpus_per_server", 2))
    return RealOptions(steps=int(wl.get("steps", RealOptions.steps)), per_server=per,
                       nodes=int(wl.get("gpus", 6)) // per,
                       checkpoint_every=int(wl.get("checkpoint_every", RealOptions.checkpoint_every)),
                       job_id=f"drill-{name}-{int(time.time())}",   # a run of its own: its checkpoints
                       gloo_timeout_s=float(wl.get("gloo_timeout_s", RealOptions.gloo_timeout_s)), dataset=dataset,
                       rdzv_join_timeout_s=float(wl.get("rdzv_join_timeout_s", RealOptions.rdzv_join_timeout_s)))


def _drill(twin: Any, doc: dict[str, Any], wl: dict[str, Any], out: Path, owned: bool, log: Any) -> dict[str, Any]:
    from workloads.train.real_cli import lustre_mount

    fault = (doc.get("schedule") or [None])[0]
    check_target(twin, fault)
    if owned and twin.manifest.section("lustre") is not None and lustre_mount(twin) is None:
        from services.lustre.client.mount import mount_background

        mount_background(twin.run.path, str(out / "lustre"))
    stage = None
    if doc.get("storage"):
        mount = lustre_mount(twin)
        if mount is None:
            raise BadInput("the drill stages its dataset into the Lustre mount: `twin lustre mount DIR` first")
        stage = _stage(twin, doc["name"], doc["storage"]["dataset"], Path(mount), log)
    inj = Injector(twin, fault, log)
    opts = options(doc["name"], wl, stage.pop("path") if stage else "")
    try:
        r = run_real(twin, opts, None, log=log, on_poll=inj)
    finally:
        inj.heal()
    r["leases_left"] = left_leases(twin, opts.job_id)
    if stage is not None:
        r["stage"] = stage
    checks = check(doc.get("expect") or [], r)
    report = {"drill": doc["name"], "real": True, "not_deterministic": "step times, the step the fault lands after, "
              "the time to resume, the measured all-reduce", "result": r, "expectations": checks,
              "passed": all(c["passed"] for c in checks)}
    (out / "report.json").write_text(json.dumps(report, indent=1, default=str))
    return report
