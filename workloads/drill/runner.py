"""Running a drill: start (or join) the twin, run the workload with the fault schedule, requeue and
resume after each failure as a scheduler would, then measure and check.

Determinism: faults fire at step boundaries chosen from modelled time, random targets come from
`random.Random(seed)`, and every figure in the report is modelled, so the same seed gives the
same report. Wall-clock facts (when it ran, how long, the raw bus traffic) live under the report's
"wall" key, which comparisons leave out.

Storage (`storage:` in the drill): the twin's Lustre is mounted (FUSE) under OUT/lustre for the run;
checkpoints can live there (real writes through the Lustre client, the write time from the Lustre
model with the live faults), and a dataset is made in the S3 gateway (seeded bytes), staged into the
mount by `twin stage`'s job (faults can fire mid-staging), verified file by file against the S3 ETags
and then read by the training each step. Staging is real I/O: its duration and retries are wall facts
(the report's "stage" says so); the objects, bytes and verification are reproducible.
"""

from __future__ import annotations

import random
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from workloads.drill import expectations, faults
from workloads.drill.dataset import lustre_layout, stage_dataset
from workloads.drill.spec import Drill
from workloads.drill.study import run_study
from workloads.train import checkpoint_store
from workloads.train.runner import Hooks, JobResult, Touched, TrainJob

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
                from workloads.drill.slurm_runner import run_slurm

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
    from workloads.train.config import TrainConfig

    return TrainConfig()


def _run_workload(drill: Drill, seed: int, out: Path, twin: Any, report: dict[str, Any], wall: dict[str, Any],
                  log: Log) -> None:
    st = drill.storage
    if not st.get("lustre_mount"):
        _workload(drill, seed, out, twin, report, wall, log, out / "checkpoints", None)
        return
    from services.lustre.client.mount import MountError, mount_background, unmount

    if twin.manifest.section("lustre") is None:
        raise MountError("the drill keeps its data on Lustre: the twin runs none (`twin: {lustre: true}`)")
    mp = out / "lustre"
    if mp.is_dir() and not any(mp.iterdir()):
        mp.rmdir()
    rec = mount_background(twin.run.path, str(mp))
    log(f"Lustre {rec['mgs']} mounted on {mp} (FUSE client pid {rec['pid']})")
    try:
        ckdir = mp / "checkpoints" / drill.workload.job_id if st.get("checkpoints") == "lustre" \
            else out / "checkpoints"
        _workload(drill, seed, out, twin, report, wall, log, ckdir, mp)
    finally:
        unmount(twin.run.path, str(mp))


def _workload(drill: Drill, seed: int, out: Path, twin: Any, report: dict[str, Any], wall: dict[str, Any],
              log: Log, ckdir: Path, mount: Path | None) -> None:
    _DrillRun(drill, seed, twin, report, wall, log, ckdir, mount).run()


class _DrillRun:
    """One drill's workload on a live twin: the schedule's faults fired from the training's hooks, a
    scheduler's requeues after each failure, then what the bus, the checkpoints and the attempts
    show, written into `report` (modelled figures) and `wall` (wall-clock facts)."""

    def __init__(self, drill: Drill, seed: int, twin: Any, report: dict[str, Any], wall: dict[str, Any],
                 log: Log, ckdir: Path, mount: Path | None) -> None:
        assert drill.workload is not None
        self.drill, self.seed, self.twin, self.report, self.wall, self.log = drill, seed, twin, report, wall, log
        self.ckdir, self.mount = ckdir, mount
        self.cfg = drill.workload
        self.pending = list(drill.schedule)
        self.timeline: list[dict[str, Any]] = report["timeline"]
        self.clock = 0.0  # modelled time at the start of the current attempt
        self.written: list[int] = []  # steps whose checkpoint the job wrote
        self.faults_rep: dict[str, dict[str, Any]] = {}
        self.wall_faults: list[str] = []
        self.exclude: tuple[str, ...] = ()  # servers drained for the next attempts
        self.bus: list[dict[str, Any]] = []
        self._fire_lock = threading.Lock()

    def run(self) -> None:
        self._prepare_checkpoint_dir()
        self.targets = _targets(self.drill, _job_servers(self.drill, self.twin), random.Random(self.seed))
        self.sub = self.twin.events("events/#")
        self.run_wall0 = time.monotonic()
        daemons = self.twin.manifest.daemons
        lustre = {d.name for d in daemons if d.kind.startswith("lustre_")}
        ceph = {"ceph"} | {d.name for d in daemons if d.kind.startswith("ceph_")}
        self.storage_nodes = {"oss": lustre, "mds": lustre, "osd": ceph}
        if self.drill.storage.get("dataset"):
            self._stage_dataset()
        final = self._train()
        self._observe_faults()
        self._report_checkpoints()
        if self.drill.storage:
            self._report_storage()
        self._report_outcome(final)

    def _prepare_checkpoint_dir(self) -> None:
        shutil.rmtree(self.ckdir, ignore_errors=True)
        if self.mount is not None and self.drill.storage.get("checkpoints") == "lustre":
            self.ckdir.mkdir(parents=True, exist_ok=True)
            lustre_layout(self.twin, self.mount, self.drill.storage["stripe_count"])(self.ckdir)

    # --- the fault schedule, fired from the training's hooks -----------------------------------

    def _pump(self) -> None:
        while not self.sub.messages.empty():
            self.bus.append(self.sub.messages.get_nowait())

    def _fire(self, f: Any, step: int, t: float, **extra: Any) -> Touched:
        with self._fire_lock:
            self.pending.remove(f)
            self._pump()
            mark = len(self.bus)
            target = self.targets[f.name]
            what, tch = faults.inject(self.twin, f, target)
            if "wall_s" in f.at:
                self.wall_faults.append(f.name)
            now = self.clock + t
            self.log(f"[{now / 60:8.1f} min] fault {f.name}: {what}")
            self.timeline.append({"t_s": round(now, 6), "kind": "fault", "name": f.name, "fault": f.kind,
                                  "detail": what, "step": step, **extra})
            self.faults_rep[f.name] = {"name": f.name, "fault": f.kind, "t_s": round(now, 6), "step": step,
                                       "target": target or {k: v for k, v in f.args.items()}, "effect": what,
                                       **extra, "_mark": mark, "_server": target.get("server"),
                                       "_nodes": self.storage_nodes.get(f.kind, set()), "observed": []}
            return tch

    def _due(self, f: Any, step: int, t: float) -> bool:
        return (("step" in f.at and step >= f.at["step"])
                or ("modelled_min" in f.at and self.clock + t >= f.at["modelled_min"] * 60)
                or ("wall_s" in f.at and time.monotonic() - self.run_wall0 >= f.at["wall_s"]))

    def before_step(self, job: TrainJob, step: int, t: float) -> Touched | None:
        touched = Touched()
        for f in list(self.pending):
            if self._due(f, step, t):
                tch = self._fire(f, step, t)
                touched = Touched(touched.servers + tch.servers, touched.fabric or tch.fabric)
        return touched if (touched.servers or touched.fabric) else None

    def during_checkpoint(self, job: TrainJob, step: int, t: float) -> None:
        for f in [f for f in self.pending if f.at.get("checkpoint") == step]:
            self._fire(f, step, t, checkpoint=step)

    def on_event(self, e: dict[str, Any]) -> None:
        if e["kind"] == "checkpoint":
            self.written.append(e["step"])

    def _stage_dataset(self) -> None:
        """Stage the dataset before training, firing the `staged_pct` faults as the bytes arrive."""
        assert self.mount is not None
        staged = [f for f in self.pending if "staged_pct" in f.at]

        def on_bytes(done: int, total: int) -> None:
            for f in [f for f in staged if f in self.pending and done >= total * f.at["staged_pct"] / 100]:
                self._fire(f, 0, 0.0, staged_pct=round(100 * done / max(1, total), 1))

        stage = stage_dataset(self.drill.name, self.drill.storage["dataset"], self.drill.storage["stripe_count"],
                              self.seed, self.twin, self.mount, on_bytes, self.log)
        for f in [f for f in staged if f in self.pending]:  # an empty dataset: fire them at the end of staging
            self._fire(f, 0, 0.0, staged_pct=100.0)
        self.report["stage"] = stage
        self.timeline.append({"t_s": 0.0, "kind": "stage", "detail": f"staged {stage['copied']} of "
                              f"{stage['listed']} objects from {stage['source']}, {stage['verified_after_stage']} "
                              f"verified, {len(stage['retries'])} retries, {len(stage['failed'])} failed "
                              "(before training)"})
        self.cfg = self.cfg.with_(dataset=stage.pop("path"))

    # --- attempts: run, fail, react as a scheduler, requeue ------------------------------------

    def _train(self) -> JobResult:
        """Run the job until it completes or runs out of requeues; returns the last attempt's result."""
        attempt = 0
        prev_fail: dict[str, Any] | None = None
        while True:
            attempt += 1
            res = TrainJob(self.cfg.with_(job_id=f"{self.cfg.job_id}"), self.twin, self.ckdir, resume=attempt > 1,
                           hooks=Hooks(self.before_step, self.on_event, self.during_checkpoint),
                           exclude=self.exclude, take_mig=self.drill.take_mig, log=self.log).run()
            self._record_attempt(attempt, res, prev_fail)
            if res.status == "completed":
                self.clock += res.modelled_s
                return res
            prev_fail = self._record_failure(attempt, res)
            if attempt > self.drill.scheduler["max_requeues"]:
                self.log(f"giving up after {attempt} attempts")
                return res

    def _record_attempt(self, attempt: int, res: JobResult, prev_fail: dict[str, Any] | None) -> None:
        """The attempt's events on the timeline, its summary, and how the previous failure resumed."""
        clock = self.clock
        for e in res.events:
            if e["kind"] in ("start", "resumed", "checkpoint", "fault_seen", "failed", "completed", "step_time"):
                self.timeline.append({**e, "t_s": round(clock + e["t_s"], 6), "attempt": attempt})
        first_step_t = clock + (res.restore_s if res.resumed_from is not None else 0.0)
        if prev_fail is not None:
            prev_fail["resumed_from"] = res.resumed_from or 0
            prev_fail["restore_s"] = res.restore_s
            prev_fail["resume_gap_s"] = round(first_step_t - prev_fail["t_s"], 6)
            prev_fail["time_lost_s"] = round(prev_fail["lost_work_s"] + prev_fail["detect_s"] + prev_fail["requeue_s"]
                                             + prev_fail["reboot_s"] + res.restore_s, 6)
        self.report["attempts"].append({
            "attempt": attempt, "start_s": round(clock, 6), "status": res.status,
            "first_step": res.first_step, "last_step": res.last_step,
            "resumed_from": res.resumed_from, "modelled_s": round(res.modelled_s, 6),
            "useful_s": round(res.useful_s, 6), "checkpoint_s": round(res.checkpoint_s, 6),
            "step_time": res.step_time, "servers": res.servers,
            "dataset_reads": res.dataset_reads, "dataset_bytes": res.dataset_bytes,
            "progress": _thin(res.progress, clock)})

    def _record_failure(self, attempt: int, res: JobResult) -> dict[str, Any]:
        """What the failure lost, the scheduler's reaction, and the fault it is blamed on."""
        t_fault = self.clock + res.modelled_s - res.detect_s
        last_ck = max([s for s in self.written if s <= res.last_step], default=None)
        ck_t = max([e["t_s"] for e in res.events if e["kind"] == "checkpoint"], default=None)
        since = ck_t if ck_t is not None else (res.restore_s if res.resumed_from is not None else 0.0)
        lost_work = self.clock + res.modelled_s - res.detect_s - (self.clock + since)
        self.clock += res.modelled_s
        reboot_s = self._drain(res)
        requeue = self.drill.scheduler["requeue_s"]
        self.timeline.append({"t_s": round(self.clock + reboot_s, 6), "kind": "reaction",
                              "detail": f"requeue job {self.cfg.job_id} (attempt {attempt + 1})"})
        fault_name = next((n for n, f in sorted(self.faults_rep.items(), key=lambda kv: -kv[1]["t_s"])
                           if f["t_s"] <= t_fault + 1e-6), "external")
        failure = {"fault": fault_name, "t_s": round(t_fault, 6), "reason": res.reason, "kind": res.failure_kind,
                   "server": res.failed_server, "step": res.last_step, "last_checkpoint": last_ck,
                   "lost_work_s": round(lost_work, 6), "detect_s": res.detect_s, "requeue_s": requeue,
                   "reboot_s": reboot_s, "resumed_from": None, "resume_gap_s": None, "time_lost_s": None}
        self.report["failures"].append(failure)
        self.clock += reboot_s + requeue
        return failure

    def _drain(self, res: JobResult) -> float:
        """The failed server: rebooted (a lost GPU) or left out of the next attempts (no fabric path).
        Returns the modelled reboot time."""
        if res.failure_kind in ("xid", "lease") and res.failed_server:
            self.twin.gpu_node(res.failed_server).reboot()
            self.timeline.append({"t_s": round(self.clock, 6), "kind": "reaction", "detail":
                                  f"drain {res.failed_server}, reboot it (GPU lost until reboot)"})
            return self.drill.scheduler["reboot_s"]
        if res.failure_kind == "fabric" and res.failed_server:
            self.exclude = (*self.exclude, res.failed_server)
            self.timeline.append({"t_s": round(self.clock, 6), "kind": "reaction",
                                  "detail": f"drain {res.failed_server} (no fabric path); requeue without it"})
        return 0.0

    # --- what was seen ------------------------------------------------------------------------

    def _observe_faults(self) -> None:
        """The bus events each fault produced (waiting briefly for the ones the expectations name)."""
        wanted: dict[str, set[str]] = {}
        for e in self.drill.expect:
            if "event" in e:
                wanted.setdefault(e["event"]["fault"], set()).add(e["event"]["kind"])
        deadline = time.monotonic() + WATCH_S
        while True:
            self._pump()
            if all(wanted.get(n, set()) <= _kinds(f, self.bus) for n, f in self.faults_rep.items()) \
                    or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        self.sub.close()
        job_kinds = {f["fault"]: {"job_failed"} for f in self.report["failures"]}
        raw = {}
        for n, f in self.faults_rep.items():
            seen = _kinds(f, self.bus)
            raw[n] = sorted(seen)
            f["observed"] = sorted((seen & wanted.get(n, set())) | job_kinds.get(n, set()))
            del f["_mark"], f["_server"], f["_nodes"]
        self.report["faults"] = [self.faults_rep[f.name] for f in self.drill.schedule if f.name in self.faults_rep]
        self.report["not_fired"] = [f.name for f in self.pending]
        self.wall["bus_events_per_fault"] = raw
        self.wall["wall_timed_faults"] = self.wall_faults

    def _report_checkpoints(self) -> None:
        good, bad = checkpoint_store.scan(self.ckdir)
        complete = {c.step for c in good}
        self.report["checkpoints"] = {"written": sorted(set(self.written)), "complete": [c.step for c in good],
                                      "incomplete": [d.name for d in bad],
                                      "lost": sorted(set(self.written) - complete)}
        for f in self.report["faults"]:
            if f.get("checkpoint") is not None and f["checkpoint"] in complete:
                f["observed"] = sorted({*f["observed"], "checkpoint_complete"})

    def _report_storage(self) -> None:
        report, storage = self.report, self.drill.storage
        report["storage"] = {
            "lustre_mount": bool(self.mount),
            "checkpoint_dir": "lustre mount" if storage.get("checkpoints") == "lustre" else "local",
            "checkpoint_model": self.cfg.checkpoint_storage,
            "checkpoint_write_s": [e["write_s"] for e in report["timeline"] if e["kind"] == "checkpoint"],
            "dataset": "staged into the Lustre mount" if storage.get("dataset") else None,
            "dataset_reads": sum(a["dataset_reads"] for a in report["attempts"]),
            "dataset_bytes": sum(a["dataset_bytes"] for a in report["attempts"]),
            "storage_failures": [f["reason"] for f in report["failures"] if f.get("kind") == "storage"]}

    def _report_outcome(self, final: JobResult) -> None:
        """The last attempt's end and the run's goodput, all in modelled time."""
        report, clock = self.report, self.clock
        report["final"] = {"status": final.status, "step": final.last_step, "reason": final.reason}
        useful = sum(a["useful_s"] for a in report["attempts"]) - sum(f["lost_work_s"] for f in report["failures"])
        ck = sum(a["checkpoint_s"] for a in report["attempts"])
        report["metrics"] = {"wall_s": round(clock, 6), "useful_s": round(useful, 6),
                             "goodput": round(useful / clock, 6) if clock else 0.0,
                             "checkpoint_s": round(ck, 6),
                             "checkpoint_overhead": round(ck / clock, 6) if clock else 0.0,
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
        if (f["_server"] and node == f["_server"]) or (f.get("_nodes") and node in f["_nodes"]) \
                or (not f["_server"] and not f.get("_nodes") and "/events/fabric/" in topic):
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
