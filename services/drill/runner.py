"""Running a drill: start (or join) the twin, run the workload with the fault schedule, requeue and
resume after each failure as a scheduler would, then measure and check.

Determinism: faults fire at step boundaries chosen from modelled time, random targets come from
`random.Random(seed)`, and every figure in the report is modelled, so the same seed gives the
same report. Wall-clock facts (when it ran, how long, the raw bus traffic) live under the report's
"wall" key, which comparisons leave out.
"""

from __future__ import annotations

import random
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from services.drill import expectations, faults
from services.drill.spec import Drill
from services.drill.study import run_study
from services.train import checkpoint_store
from services.train.runner import Hooks, JobResult, Touched, TrainJob

Log = Callable[[str], None]
WATCH_S = 5.0  # wall seconds to wait for an expected bus event after a fault


def _targets(drill: Drill, servers: list[str], rng: random.Random) -> dict[str, dict[str, Any]]:
    """Resolve `random` targets once, from the seed, before anything runs."""
    out = {}
    for f in drill.schedule:
        t: dict[str, Any] = {}
        if f.kind in ("xid", "reboot"):
            s = f.args.get("server", "random")
            t["server"] = rng.choice(servers) if s == "random" else s
            if f.kind == "xid":
                g = f.args.get("gpu", "random")
                t["gpu"] = rng.randrange(8) if g == "random" else int(g)
        out[f.name] = t
    return out


def _job_servers(drill: Drill, twin: Any) -> list[str]:
    cfg = drill.workload
    assert cfg is not None
    if cfg.servers:
        return list(cfg.servers)
    return TrainJob(cfg, twin, "/nonexistent" if cfg.checkpoint_every else None,
                    take_mig=drill.take_mig).pick_servers()


def run(drill: Drill, seed: int, out: Path, run_dir: Path | None = None, log: Log | None = None,
        up_options: dict[str, Any] | None = None) -> dict[str, Any]:
    log = log or (lambda _m: None)
    wall0, started = time.monotonic(), time.time()
    out.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {"drill": drill.name, "file": Path(drill.path).name, "description": drill.description,
                              "seed": seed, "topology": drill.topology, "twin_options": drill.twin,
                              "modelled": "every time in this report is modelled twin time (seconds) unless under "
                                          "'wall'", "timeline": [], "faults": [], "failures": [], "attempts": []}
    wall: dict[str, Any] = {"started_at": started}
    if drill.workload is not None:
        report["workload"] = drill.workload.as_dict()
    if drill.study is not None:
        report["study"] = run_study(drill.study, drill.workload or _default_cfg(), seed)
    if drill.workload is not None and (drill.schedule or not drill.study):
        from emulator.client import Twin

        owned = run_dir is None
        twin = Twin.up(drill.topology, run_dir=out / "twin", **{**drill.twin, **(up_options or {})}) if owned \
            else Twin.connect(run_dir)
        wall["twin"] = "started for this drill" if owned else f"joined {run_dir}"
        try:
            if drill.backend == "slurm":
                from services.drill.slurm_runner import run_slurm

                run_slurm(drill, seed, out, twin, report, wall, log)
            else:
                _run_workload(drill, seed, out, twin, report, wall, log)
        finally:
            if owned:
                twin.down()
                shutil.rmtree(out / "twin", ignore_errors=True)
    report["expectations"] = expectations.check(drill.expect, report)
    report["passed"] = all(x["passed"] for x in report["expectations"])
    wall["elapsed_s"] = time.monotonic() - wall0
    report["wall"] = wall
    return report


def _default_cfg() -> Any:
    from services.train.config import TrainConfig

    return TrainConfig()


def _run_workload(drill: Drill, seed: int, out: Path, twin: Any, report: dict[str, Any], wall: dict[str, Any],
                  log: Log) -> None:
    cfg = drill.workload
    assert cfg is not None
    rng = random.Random(seed)
    ckdir = out / "checkpoints"
    shutil.rmtree(ckdir, ignore_errors=True)
    targets = _targets(drill, _job_servers(drill, twin), rng)
    pending = list(drill.schedule)
    sub = twin.events("events/#")
    bus: list[dict[str, Any]] = []
    timeline = report["timeline"]
    clock = 0.0  # modelled time at the start of the current attempt
    run_wall0 = time.monotonic()
    written: list[int] = []
    faults_rep: dict[str, dict[str, Any]] = {}
    wall_faults: list[str] = []

    def pump() -> None:
        while not sub.messages.empty():
            bus.append(sub.messages.get_nowait())

    def before_step(job: TrainJob, step: int, t: float) -> Touched | None:
        touched = Touched()
        for f in list(pending):
            due = (("step" in f.at and step >= f.at["step"])
                   or ("modelled_min" in f.at and clock + t >= f.at["modelled_min"] * 60)
                   or ("wall_s" in f.at and time.monotonic() - run_wall0 >= f.at["wall_s"]))
            if not due:
                continue
            pending.remove(f)
            pump()
            mark = len(bus)
            what, tch = faults.inject(twin, f, targets[f.name])
            if "wall_s" in f.at:
                wall_faults.append(f.name)
            log(f"[{(clock + t) / 60:8.1f} min] fault {f.name}: {what}")
            timeline.append({"t_s": round(clock + t, 6), "kind": "fault", "name": f.name, "fault": f.kind,
                             "detail": what, "step": step})
            faults_rep[f.name] = {"name": f.name, "fault": f.kind, "t_s": round(clock + t, 6), "step": step,
                                  "target": targets[f.name] or {k: v for k, v in f.args.items()}, "effect": what,
                                  "_mark": mark, "_server": targets[f.name].get("server"), "observed": []}
            touched = Touched(touched.servers + tch.servers, touched.fabric or tch.fabric)
        return touched if (touched.servers or touched.fabric) else None

    def on_event(e: dict[str, Any]) -> None:
        if e["kind"] == "checkpoint":
            written.append(e["step"])

    attempt = 0
    exclude: tuple[str, ...] = ()
    final: JobResult | None = None
    prev_fail: dict[str, Any] | None = None
    while True:
        attempt += 1
        job = TrainJob(cfg.with_(job_id=f"{cfg.job_id}"), twin, ckdir, resume=attempt > 1,
                       hooks=Hooks(before_step, on_event), exclude=exclude, take_mig=drill.take_mig, log=log)
        res = job.run()
        final = res
        for e in res.events:
            if e["kind"] in ("start", "resumed", "checkpoint", "fault_seen", "failed", "completed", "step_time"):
                timeline.append({**e, "t_s": round(clock + e["t_s"], 6), "attempt": attempt})
        first_step_t = clock + (res.restore_s if res.resumed_from is not None else 0.0)
        if prev_fail is not None:
            prev_fail["resumed_from"] = res.resumed_from or 0
            prev_fail["restore_s"] = res.restore_s
            prev_fail["resume_gap_s"] = round(first_step_t - prev_fail["t_s"], 6)
            prev_fail["time_lost_s"] = round(prev_fail["lost_work_s"] + prev_fail["detect_s"] + prev_fail["requeue_s"]
                                             + prev_fail["reboot_s"] + res.restore_s, 6)
        report["attempts"].append({"attempt": attempt, "start_s": round(clock, 6), "status": res.status,
                                   "first_step": res.first_step, "last_step": res.last_step,
                                   "resumed_from": res.resumed_from, "modelled_s": round(res.modelled_s, 6),
                                   "useful_s": round(res.useful_s, 6), "checkpoint_s": round(res.checkpoint_s, 6),
                                   "step_time": res.step_time, "servers": res.servers,
                                   "progress": _thin(res.progress, clock)})
        if res.status == "completed":
            clock += res.modelled_s
            break
        # the failure: what was lost, and the scheduler's reaction
        t_fault = clock + res.modelled_s - res.detect_s
        last_ck = max([s for s in written if s <= res.last_step], default=None)
        ck_t = max([e["t_s"] for e in res.events if e["kind"] == "checkpoint"], default=None)
        since = ck_t if ck_t is not None else (res.restore_s if res.resumed_from is not None else 0.0)
        lost_work = clock + res.modelled_s - res.detect_s - (clock + since)
        clock += res.modelled_s
        reboot_s = 0.0
        reaction = f"requeue job {cfg.job_id} (attempt {attempt + 1})"
        if res.failure_kind in ("xid", "lease") and res.failed_server:
            twin.gpu_node(res.failed_server).reboot()
            reboot_s = drill.scheduler["reboot_s"]
            timeline.append({"t_s": round(clock, 6), "kind": "reaction", "detail":
                             f"drain {res.failed_server}, reboot it (GPU lost until reboot)"})
        elif res.failure_kind == "fabric" and res.failed_server:
            exclude = (*exclude, res.failed_server)
            timeline.append({"t_s": round(clock, 6), "kind": "reaction",
                             "detail": f"drain {res.failed_server} (no fabric path); requeue without it"})
        requeue = drill.scheduler["requeue_s"]
        timeline.append({"t_s": round(clock + reboot_s, 6), "kind": "reaction", "detail": reaction})
        fault_name = next((n for n, f in sorted(faults_rep.items(), key=lambda kv: -kv[1]["t_s"])
                           if f["t_s"] <= t_fault + 1e-6), "external")
        prev_fail = {"fault": fault_name, "t_s": round(t_fault, 6), "reason": res.reason, "kind": res.failure_kind,
                     "server": res.failed_server, "step": res.last_step, "last_checkpoint": last_ck,
                     "lost_work_s": round(lost_work, 6), "detect_s": res.detect_s, "requeue_s": requeue,
                     "reboot_s": reboot_s, "resumed_from": None, "resume_gap_s": None, "time_lost_s": None}
        report["failures"].append(prev_fail)
        clock += reboot_s + requeue
        if attempt > drill.scheduler["max_requeues"]:
            log(f"giving up after {attempt} attempts")
            break
    # bus events each fault produced (wait briefly for the ones the expectations name)
    wanted: dict[str, set[str]] = {}
    for e in drill.expect:
        if "event" in e:
            wanted.setdefault(e["event"]["fault"], set()).add(e["event"]["kind"])
    deadline = time.monotonic() + WATCH_S
    while True:
        pump()
        if all(wanted.get(n, set()) <= _kinds(f, bus) for n, f in faults_rep.items()) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    sub.close()
    job_kinds = {f["fault"]: {"job_failed"} for f in report["failures"]}
    raw = {}
    for n, f in faults_rep.items():
        seen = _kinds(f, bus)
        raw[n] = sorted(seen)
        f["observed"] = sorted((seen & wanted.get(n, set())) | job_kinds.get(n, set()))
        del f["_mark"], f["_server"]
    report["faults"] = [faults_rep[f.name] for f in drill.schedule if f.name in faults_rep]
    report["not_fired"] = [f.name for f in pending]
    wall["bus_events_per_fault"] = raw
    wall["wall_timed_faults"] = wall_faults
    good, bad = checkpoint_store.scan(ckdir)
    report["checkpoints"] = {"written": sorted(set(written)), "complete": [c.step for c in good],
                             "incomplete": [d.name for d in bad],
                             "lost": sorted(set(written) - {c.step for c in good})}
    assert final is not None
    report["final"] = {"status": final.status, "step": final.last_step, "reason": final.reason}
    useful = sum(a["useful_s"] for a in report["attempts"]) - sum(f["lost_work_s"] for f in report["failures"])
    ck = sum(a["checkpoint_s"] for a in report["attempts"])
    report["metrics"] = {"wall_s": round(clock, 6), "useful_s": round(useful, 6),
                         "goodput": round(useful / clock, 6) if clock else 0.0,
                         "checkpoint_s": round(ck, 6), "checkpoint_overhead": round(ck / clock, 6) if clock else 0.0,
                         "time_lost_s": round(sum(f["time_lost_s"] or 0 for f in report["failures"]), 6),
                         "failures": len(report["failures"]),
                         "max_throughput_drop_pct": _max_drop(report["timeline"]),
                         "note": "goodput = useful training time (steps kept) / elapsed time, both modelled"}
    report["timeline"].sort(key=lambda e: (e["t_s"], e["kind"]))


def _kinds(f: dict[str, Any], bus: list[dict[str, Any]]) -> set[str]:
    out = set()
    for m in bus[f["_mark"]:]:
        topic = m.get("_topic", "")
        node = m.get("node") or topic.split("/")[-2]
        if (f["_server"] and node == f["_server"]) or (not f["_server"] and "/events/fabric/" in topic):
            out.add(str(m.get("kind") or topic.rsplit("/", 1)[-1]))
    return out


def _thin(progress: list[tuple[int, float]], offset: float, most: int = 400) -> list[list[float]]:
    if not progress:
        return []
    stride = max(1, len(progress) // most)
    pts = progress[::stride]
    if pts[-1] != progress[-1]:
        pts.append(progress[-1])
    return [[s, round(offset + t, 6)] for s, t in pts]


def _max_drop(timeline: list[dict[str, Any]]) -> float:
    rates = [e.get("tokens_per_s") for e in timeline if e["kind"] == "step_time"]
    base = [e for e in timeline if e["kind"] == "start"]
    if not rates or not base:
        return 0.0
    first = base[0]
    healthy = first.get("tokens_per_s")
    if healthy is None:
        return 0.0
    return round(max(0.0, max((healthy - r) / healthy * 100 for r in rates)), 3)
