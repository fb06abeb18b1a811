"""A drill of the real job (`workload: {real: true}`): `twin drill run topologies/drills/real_*.yaml`.

The model's drills (workloads/drill/) step through modelled time; this one runs `twin train --real`
(real torchrun ranks) on a `--network netns` twin, cuts a server off at a step (from rank 0's
progress), reconnects it when the job has ended, and checks what the real job
did. Not deterministic: step times, the step the fault lands after (the fault is raised once rank
0 has reported the step; the others may be a step ahead), the time to resume, the measured
all-reduce. Deterministic: which ranks restart, from which checkpoint (the last one before the
fault), the group size after it.

File: name, description, topology, twin {lustre}, workload {real: true, gpus, gpus_per_server,
steps, checkpoint_every, gloo_timeout_s}, schedule [{name, at: {step}, fault: cut, host}],
expect [{job_completes}, {ranks_started: [..]}, {resumed_from_last_checkpoint_before_fault},
{checkpoints_on_lustre}, {leases_released_but_the_cut_servers}].
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import yaml

from emulator.errors import BadInput
from workloads.train.real_cli import run_real
from workloads.train.real_launch import RealOptions

EXPECTATIONS = ("job_completes", "ranks_started", "resumed_from_last_checkpoint_before_fault",
                "checkpoints_on_lustre", "leases_released_but_the_cut_servers")
WORKLOAD_KEYS = {"real", "gpus", "gpus_per_server", "steps", "checkpoint_every", "gloo_timeout_s"}


def is_real(path: Path) -> bool:
    try:
        doc = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError):
        return False  # the drill loader reports it
    return isinstance(doc, dict) and isinstance(doc.get("workload"), dict) and doc["workload"].get("real") is True


def parse(path: Path) -> dict[str, Any]:
    doc = yaml.safe_load(Path(path).read_text())
    wl = doc.get("workload") or {}
    extra = set(wl) - WORKLOAD_KEYS
    if extra:
        raise BadInput(f"{path}: workload keys {', '.join(sorted(extra))} unknown; "
                       f"known: {', '.join(sorted(WORKLOAD_KEYS))}")
    for i, f in enumerate(doc.get("schedule") or []):
        if f.get("fault") != "cut" or not isinstance((f.get("at") or {}).get("step"), int) or not f.get("host"):
            raise BadInput(f"{path}: schedule[{i}]: a real drill's fault is "
                           "{fault: cut, host: gpuNNN, at: {step: N}}")
    for x in doc.get("expect") or []:
        if not isinstance(x, dict) or len(x) != 1 or next(iter(x)) not in EXPECTATIONS:
            raise BadInput(f"{path}: expectation {x!r}: one of {', '.join(EXPECTATIONS)}")
    return doc


class Injector:
    """Cuts `host` off once rank 0 reports `step`; `heal` reconnects it when the job has ended (not
    earlier: its agent, still retrying the rendezvous store for 60 s, would rejoin and restart the
    group a second time, which makes the drill's group sizes depend on timing)."""

    def __init__(self, twin: Any, fault: dict[str, Any] | None, log: Any) -> None:
        self.twin, self.fault, self.log = twin, fault, log
        self.cut_t: float | None = None
        self.reconnected = False

    def __call__(self, _job: Any, evs: list[dict[str, Any]]) -> None:
        if self.fault is None:
            return
        if self.cut_t is None and any(e["kind"] == "step" and e["step"] >= self.fault["at"]["step"] for e in evs):
            self.twin.network().cut_off(self.fault["host"])
            self.cut_t = time.time()
            self.log(f"{self.fault['name']}: {self.fault['host']} cut off after step {self.fault['at']['step']}")

    def heal(self) -> None:
        if self.cut_t is not None and not self.reconnected:
            self.twin.network().reconnect(self.fault["host"])
            self.reconnected = True
            self.log(f"{self.fault['host']} reconnected")


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
            fault_t = r["fault"]["t"] if r.get("fault") else None
            before = [c for c, t in r["checkpoints_at"] if fault_t is not None and t <= fault_t]
            got = bool(before) and r.get("resumed_from_step") == before[-1]
            why = f"resumed from {r.get('resumed_from_step')}; checkpoints up to the fault: {before}"
        elif key == "checkpoints_on_lustre":
            got, why = r["checkpoint_storage"].startswith("lustre"), r["checkpoint_storage"]
        else:  # the job releases every lease it can reach; a cut-off server's waits for its reconnection
            cut = {f"{r['fault']['target']}"} if r.get("fault") else set()
            held = [x for x in r["leases_left"] if x.split()[0] not in cut]
            got = not held and set(r["not_released"]) <= cut
            why = (f"not released by the job: {sorted(r['not_released']) or 'none'}; "
                   f"held after it: {r['leases_left'] or 'none'}")
        out.append({"expectation": key, "value": want, "passed": got == want if key != "ranks_started" else got,
                    "why": why})
    return out


def run(path: Path, out: Path, run_dir: Path | None, log: Any) -> dict[str, Any]:
    from emulator.client import Twin

    doc = parse(path)
    wl, twin_opts = doc["workload"], doc.get("twin") or {}
    out.mkdir(parents=True, exist_ok=True)
    owned = run_dir is None
    twin = (Twin.up(doc["topology"], run_dir=out / "twin", network="netns", lustre=bool(twin_opts.get("lustre")),
                    timeout=120) if owned else Twin.connect(run_dir))
    try:
        return _drill(twin, doc, wl, out, owned, log)
    finally:
        if owned:
            twin.down()


def _drill(twin: Any, doc: dict[str, Any], wl: dict[str, Any], out: Path, owned: bool, log: Any) -> dict[str, Any]:
    from workloads.train.real_cli import lustre_mount

    if owned and twin.manifest.section("lustre") is not None and lustre_mount(twin) is None:
        from services.lustre.client.mount import mount_background

        mount_background(twin.run.path, str(out / "lustre"))
    fault = (doc.get("schedule") or [None])[0]
    inj = Injector(twin, fault, log)
    per = int(wl.get("gpus_per_server", 2))
    opts = RealOptions(steps=int(wl.get("steps", 300)), per_server=per, nodes=int(wl.get("gpus", 6)) // per,
                       checkpoint_every=int(wl.get("checkpoint_every", 50)), job_id=f"drill-{doc['name']}",
                       gloo_timeout_s=float(wl.get("gloo_timeout_s", 20)))
    try:
        r = run_real(twin, opts, None, log=log, on_poll=inj)
    finally:
        inj.heal()
    r["leases_left"] = left_leases(twin, opts.job_id)
    checks = check(doc.get("expect") or [], r)
    report = {"drill": doc["name"], "real": True, "not_deterministic": "step times, the step the fault lands after, "
              "the time to resume, the measured all-reduce", "result": r, "expectations": checks,
              "passed": all(c["passed"] for c in checks)}
    (out / "report.json").write_text(json.dumps(report, indent=1, default=str))
    return report
