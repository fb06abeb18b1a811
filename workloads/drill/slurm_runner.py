"""A drill whose workload runs under the twin's real Slurm (`workload: {scheduler: slurm}`).

The training job is submitted with the batch script `twin slurm train-script` renders; Slurm, not
the drill, allocates, preempts and requeues it, and the script resumes it from its checkpoint. The
drill fires its schedule from the job's progress on the bus (`train/<job>/progress`), injects
faults through the twin's APIs (a `preempt` fault submits a regression job that needs the job's
nodes) and, after the job ends, reads each attempt's result back (`CKPT_DIR/attempts/N.json`).

What is modelled and what is observed: Slurm's decisions (which step the job was preempted at,
how often it was requeued, that it resumed from its last checkpoint) are observed; every time in
the report is modelled as in the model-backed drills. A gap between attempts is modelled as the
preempting job's declared duration (`duration_min`) plus `scheduler.requeue_s` (plus `reboot_s`
after a GPU fault), not as wall time × time_scale: the emulation's own overheads (Python start-up,
Slurm's requeue delay) would otherwise count as hours of modelled time. The wall gaps are under
"wall". Because Slurm acts asynchronously, the step a preemption lands on can differ by a step or
two between runs: a Slurm drill is replayable, not bit-for-bit reproducible.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from services.slurm import jobs, lifecycle
from workloads.drill import faults
from workloads.drill.spec import Drill
from workloads.train import checkpoint_store
from workloads.train.runner import whole_gpus

Log = Callable[[str], None]
POLL_S = 0.1


def _twin_cmd() -> str:
    t = Path(sys.executable).with_name("twin")
    return str(t) if t.exists() else "twin"


class _Slurm:
    def __init__(self, twin: Any, cwd: Path) -> None:
        self.env = dict(os.environ, SLURM_CONF=str(lifecycle.conf_path(twin.run)))
        self.cwd = cwd

    def run(self, *argv: str, check: bool = True) -> str:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=30, cwd=self.cwd, env=self.env)
        if check and r.returncode:
            raise RuntimeError(f"{' '.join(argv)}: {r.stderr.strip()}")
        return r.stdout

    def state(self, job: str) -> dict[str, str]:
        out = self.run("scontrol", "show", "job", "-o", job, check=False)
        return dict(kv.split("=", 1) for kv in out.split() if "=" in kv)


def run_slurm(drill: Drill, seed: int, out: Path, twin: Any, report: dict[str, Any], wall: dict[str, Any],
              log: Log, timeout_s: float = 600.0) -> None:
    cfg = drill.workload
    assert cfg is not None
    own_slurm = lifecycle.running(twin.run) is None
    if own_slurm:
        if drill.take_mig:
            for server in twin.gpu_nodes:  # Slurm reads each node's GRES when it starts: whole GPUs, gpu:h100:8
                whole_gpus(twin.gpu_node(server))
        lifecycle.up(twin.run, timeout=120)
    wall["slurm"] = "started for this drill" if own_slurm else "joined the twin's running Slurm"
    work = out / "slurm"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    slurm = _Slurm(twin, work)
    try:
        _drive(drill, work, twin, slurm, report, wall, log, timeout_s)
    finally:
        if own_slurm:
            lifecycle.down(twin.run)


def _drive(drill: Drill, work: Path, twin: Any, slurm: _Slurm, report: dict[str, Any], wall: dict[str, Any],
           log: Log, timeout_s: float) -> None:
    cfg = drill.workload
    assert cfg is not None
    script = work / "train.sbatch"
    args = ["--gpus", str(cfg.gpus), "--tp", str(cfg.tp), "--pp", str(cfg.pp), "--params", f"{cfg.params:g}",
            "--steps", str(cfg.steps), "--global-batch", str(cfg.global_batch), "--seq-len", str(cfg.seq_len),
            "--mfu", f"{cfg.mfu:g}", "--checkpoint-every", str(cfg.checkpoint_every),
            "--checkpoint-scale", f"{cfg.checkpoint_scale:g}", "--storage-gbps", f"{cfg.storage_gbps:g}",
            "--time-scale", f"{cfg.time_scale or 1000:g}"]
    script.write_text(jobs.train_script(nodes=cfg.n_servers, job_name=cfg.job_id, twin=_twin_cmd(),
                                        run_dir=twin.run.path, ckpt_root=work / "ckpt", train_args=args,
                                        max_restarts=int(drill.scheduler["max_requeues"])))
    job = slurm.run("sbatch", "--parsable", str(script)).strip().split(";")[0]
    ckdir = work / "ckpt" / f"{cfg.job_id}-{job}"
    log(f"submitted training job {job} (exploratory, {cfg.n_servers} nodes × 8 GPUs, {cfg.steps} steps)")
    wall["slurm_job"] = job
    sub = twin.events(f"train/slurm-{job}/#")
    pending = list(drill.schedule)
    fired: list[dict[str, Any]] = []
    step, attempt_seen, t0 = 0, 0, time.monotonic()
    attempts: list[dict[str, Any]] = []
    wall_events: list[dict[str, Any]] = []
    while True:
        while not sub.messages.empty():
            m = sub.messages.get_nowait()
            if "step" in m and m.get("_topic", "").endswith("/progress"):
                step = max(step, int(m["step"]))
        path = ckdir / "attempts" / f"{attempt_seen}.json"
        if path.exists():
            doc = json.loads(path.read_text())
            doc["_wall_ended_at"] = path.stat().st_mtime
            attempts.append(doc)
            wall_events.append({"attempt": attempt_seen, "status": doc["status"],
                                "wall_started_at": doc.get("wall_started_at"), "wall_ended_at": doc["_wall_ended_at"]})
            log(f"attempt {attempt_seen}: {doc['status']} after step {doc.get('last_step')} ({doc.get('reason')})")
            attempt_seen += 1
            step = 0
            if doc["status"] == "completed" or doc["status"] == "refused":
                break
            if doc.get("failure_kind") in ("xid", "lease") and doc.get("failed_server"):
                twin.gpu_node(doc["failed_server"]).reboot()  # the operator's reaction; the health check resumes it
                log(f"rebooted {doc['failed_server']} (its node was drained by the health check)")
            if attempt_seen > drill.scheduler["max_requeues"]:
                log(f"giving up after {attempt_seen} attempts")
                break
        for f in list(pending):
            due = ("step" in f.at and step >= f.at["step"] and attempt_seen == 0) or \
                  ("wall_s" in f.at and time.monotonic() - t0 >= f.at["wall_s"])
            if not due:
                continue
            pending.remove(f)
            what = _inject(drill, f, twin, slurm, job)
            log(f"(step {step}) fault {f.name}: {what['effect']}")
            fired.append({"name": f.name, "fault": f.kind, "step": step, "attempt": attempt_seen, **what})
        st = slurm.state(job)
        if not st and not (ckdir / "attempts" / f"{attempt_seen}.json").exists():
            time.sleep(1.0)
            if not (ckdir / "attempts" / f"{attempt_seen}.json").exists():
                log(f"job {job} left the queue without a result for attempt {attempt_seen}")
                break
        if time.monotonic() - t0 > timeout_s:
            log(f"timed out after {timeout_s:.0f} s wall; cancelling job {job}")
            slurm.run("scancel", job, check=False)
            break
        time.sleep(POLL_S)
    sub.close()
    st = slurm.state(job)
    wall["slurm_restarts"] = int(st.get("Restarts", len(attempts) - 1 if attempts else 0))
    wall["attempts"] = wall_events
    wall["slurm_output"] = str(work / f"slurm-{cfg.job_id}-{job}.out")
    _report(drill, report, attempts, fired, pending, ckdir, wall)


def _inject(drill: Drill, f: Any, twin: Any, slurm: _Slurm, job: str) -> dict[str, Any]:
    cfg = drill.workload
    assert cfg is not None
    if f.kind == "preempt":
        nodes = int(f.args.get("nodes", cfg.n_servers))
        minutes = float(f.args.get("duration_min", 30))
        hold = max(1.0, minutes * 60 / (cfg.time_scale or 1000))
        reg = slurm.run("sbatch", "--parsable", "-p", "regression", "-N", str(nodes), "--gres=gpu:h100:8",
                        "-J", f"regression-{f.name}", "-o", "/dev/null", "--wrap", f"sleep {hold:.2f}").strip()
        return {"effect": f"regression job {reg} submitted: {nodes} nodes × 8 GPUs for {minutes:g} modelled min "
                          f"(Slurm preempts the exploratory job by requeue)", "regression_job": reg,
                "hold_modelled_s": minutes * 60}
    target: dict[str, Any] = {}
    if f.kind in ("xid", "reboot"):
        st = slurm.state(job)
        nodes = slurm.run("scontrol", "show", "hostnames", st.get("NodeList", "")).split() if st.get("NodeList") \
            else twin.gpu_nodes
        target["server"] = f.args.get("server") if f.args.get("server", "random") != "random" else nodes[0]
        g = f.args.get("gpu", "random")
        target["gpu"] = 0 if g == "random" else int(g)
    what, _ = faults.inject(twin, f, target)
    return {"effect": what, "target": target}


def _report(drill: Drill, report: dict[str, Any], attempts: list[dict[str, Any]], fired: list[dict[str, Any]],
            pending: list[Any], ckdir: Path, wall: dict[str, Any]) -> None:
    """The drill's report from the attempts' result files and the faults fired, in modelled time."""
    clock, written, useful_total, ck_total = _replay(drill, report, attempts, fired)
    timeline = report["timeline"]
    for f in fired:
        timeline.append({"t_s": next((p["t_s"] for p in report["failures"] if p["fault"] == f["name"]), 0.0),
                         "kind": "fault", "name": f["name"], "fault": f["fault"], "detail": f["effect"],
                         "step": f["step"]})
    report["faults"] = [{"name": f["name"], "fault": f["fault"], "step": f["step"], "effect": f["effect"],
                         "t_s": next((p["t_s"] for p in report["failures"] if p["fault"] == f["name"]), None),
                         "observed": ["job_requeued"] if any(p["fault"] == f["name"] for p in report["failures"])
                         else []} for f in fired]
    report["not_fired"] = [f.name for f in pending]
    good, bad = checkpoint_store.scan(ckdir)
    report["checkpoints"] = {"written": sorted(set(written)), "complete": [c.step for c in good],
                             "incomplete": [d.name for d in bad],
                             "lost": sorted(set(written) - {c.step for c in good})}
    final = attempts[-1] if attempts else {"status": "missing", "last_step": 0, "reason": "no attempt reported"}
    report["final"] = {"status": final["status"], "step": final.get("last_step"), "reason": final.get("reason")}
    report["scheduler"] = {"kind": "slurm", "requeues": wall.get("slurm_restarts", 0),
                           "note": "Slurm allocated, preempted and requeued the job; gaps between attempts are "
                                   "modelled (preempting job's duration + requeue_s), wall gaps are under 'wall'"}
    report["metrics"] = {"wall_s": round(clock, 6), "useful_s": round(useful_total, 6),
                         "goodput": round(useful_total / clock, 6) if clock else 0.0,
                         "checkpoint_s": round(ck_total, 6),
                         "checkpoint_overhead": round(ck_total / clock, 6) if clock else 0.0,
                         "time_lost_s": round(sum(f["time_lost_s"] or 0 for f in report["failures"]), 6),
                         "failures": len(report["failures"]), "max_throughput_drop_pct": 0.0,
                         "note": "goodput = useful training time (steps kept) / elapsed time, both modelled"}
    timeline.sort(key=lambda e: (e["t_s"], e["kind"]))


@dataclass(frozen=True)
class _Attempt:
    """What one attempt's result file says, in modelled seconds since the attempt started."""

    doc: dict[str, Any]
    restore_s: float
    resumed_from: int | None
    first: int  # the first step it computed
    last: int  # the last step it completed
    checkpoints: list[dict[str, Any]]  # its checkpoint events
    checkpoint_s: float
    useful_s: float
    modelled_s: float  # up to its end (a failure's detection time left out)

    @classmethod
    def read(cls, a: dict[str, Any]) -> _Attempt:
        events = a.get("events", [])
        step_s = next((e.get("step_s") for e in events if e["kind"] == "start"), 0.0) or 0.0
        restore_s = a.get("restore_s") or next((e.get("restore_s") for e in events if e["kind"] == "resumed"), 0.0) \
            or 0.0
        resumed_from = a.get("resumed_from")
        last = a.get("last_step") or (resumed_from or 0)
        cks = [e for e in events if e["kind"] == "checkpoint"]
        modelled = a.get("modelled_s") or 0.0
        if a["status"] == "failed":
            modelled -= a.get("detect_s", 0.0)
        return cls(a, restore_s, resumed_from, (resumed_from or 0) + 1, last, cks,
                   sum(e.get("write_s", 0.0) for e in cks), max(0, last - (resumed_from or 0)) * step_s, modelled)

    def row(self, number: int, clock: float) -> dict[str, Any]:
        """Its entry in the report's attempts, starting at modelled time `clock`."""
        a = self.doc
        return {"attempt": number, "start_s": round(clock, 6), "status": a["status"],
                "first_step": self.first, "last_step": self.last, "resumed_from": self.resumed_from,
                "modelled_s": round(self.modelled_s, 6), "useful_s": round(self.useful_s, 6),
                "checkpoint_s": round(self.checkpoint_s, 6), "servers": a.get("servers", []),
                "step_time": a.get("step_time", {}),
                "progress": [[self.first - 1, round(clock + self.restore_s, 6)],
                             [self.last, round(clock + self.modelled_s, 6)]]}


def _replay(drill: Drill, report: dict[str, Any], attempts: list[dict[str, Any]],
            fired: list[dict[str, Any]]) -> tuple[float, list[int], float, float]:
    """The attempts one after the other on the modelled clock: each one's events and row, each
    failure and Slurm's requeue. Returns the clock at the end, the checkpoints written, the useful
    and the checkpoint time."""
    timeline = report["timeline"]
    clock = useful_total = ck_total = 0.0
    written: list[int] = []
    prev: dict[str, Any] | None = None
    for i, a in enumerate(attempts):
        at = _Attempt.read(a)
        written += [e["step"] for e in at.checkpoints]
        for e in a.get("events", []):
            if e["kind"] in ("start", "resumed", "checkpoint", "fault_seen", "failed", "completed", "step_time"):
                timeline.append({**e, "t_s": round(clock + e["t_s"], 6), "attempt": i + 1})
        if prev is not None:
            _resumed(prev, at, clock, written)
            prev = None
        report["attempts"].append(at.row(i + 1, clock))
        useful_total += at.useful_s
        ck_total += at.checkpoint_s
        if a["status"] in ("completed", "refused"):
            clock += at.modelled_s
            continue
        t_fault = clock + at.modelled_s
        prev = _failure(drill, i, at, t_fault, written, fired)
        report["failures"].append(prev)
        useful_total -= max(0.0, prev["lost_work_s"])  # steps after the last checkpoint are computed again
        hold = prev["hold_s"]
        timeline.append({"t_s": round(t_fault, 6), "kind": "reaction", "detail":
                         f"Slurm requeues the job ({prev['kind']} at step {at.last}; "
                         f"{'regression job holds the nodes ' + format(hold / 60, '.0f') + ' min' if hold else ''})"})
        clock = t_fault + prev["detect_s"] + hold + prev["requeue_s"] + prev["reboot_s"]
    return clock, written, useful_total, ck_total


def _resumed(prev: dict[str, Any], at: _Attempt, clock: float, written: list[int]) -> None:
    """The previous failure, completed by how the next attempt (starting at `clock`) resumed."""
    resumed_from = at.resumed_from
    if resumed_from and prev["step"] >= resumed_from > (prev["last_checkpoint"] or 0):
        # Written as Slurm's SIGTERM arrived, before its event was recorded: the resume proves
        # it complete, so it is the latest checkpoint that existed, not a lost one.
        written.append(resumed_from)
        prev["last_checkpoint"] = resumed_from
    prev["resumed_from"] = resumed_from or 0
    prev["restore_s"] = at.restore_s
    prev["resume_gap_s"] = round(clock + at.restore_s - prev["t_s"], 6)
    prev["time_lost_s"] = round(prev["lost_work_s"] + prev["detect_s"] + prev["requeue_s"] + prev["reboot_s"]
                                + prev["hold_s"] + at.restore_s, 6)


def _failure(drill: Drill, i: int, at: _Attempt, t_fault: float, written: list[int],
             fired: list[dict[str, Any]]) -> dict[str, Any]:
    """Attempt i's end (at modelled `t_fault`): the fault fired during it, the work lost since its
    last checkpoint, the modelled delays before the next attempt."""
    a, sched = at.doc, drill.scheduler
    last_ck_t = max([e["t_s"] for e in at.checkpoints], default=at.restore_s if at.resumed_from else 0.0)
    cause = next((f for f in reversed(fired) if f["attempt"] == i), None)
    return {"fault": cause["name"] if cause else "unknown",
            "kind": "preempted" if a["status"] == "terminated" else a.get("failure_kind", "failed"),
            "t_s": round(t_fault, 6), "step": at.last, "reason": a.get("reason", ""),
            "last_checkpoint": max([s for s in written if s <= at.last], default=None),
            "lost_work_s": round(at.modelled_s - last_ck_t, 6),
            "detect_s": a.get("detect_s", 0.0) if a["status"] == "failed" else 0.0,
            "requeue_s": sched["requeue_s"],
            "reboot_s": sched["reboot_s"] if a.get("failure_kind") in ("xid", "lease") else 0.0,
            "hold_s": float(cause.get("hold_modelled_s", 0.0)) if cause else 0.0,
            "resumed_from": None, "resume_gap_s": None, "time_lost_s": None}
