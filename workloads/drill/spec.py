"""A drill file: topology, workload, a schedule of faults, expectations (YAML), validated up front.

Why validate everything before the twin starts: a drill that dies half-way on a typo wastes the
run and leaves faults behind. A bad file is refused with the file, the entry and the problem.

    name: gpu_falls_off_bus
    topology: rack                 # a name under topologies/ or a path
    twin: {fabric: false}          # options of `twin up`: fabric, lustre, ceph
    workload: {gpus: 32, pp: 4, steps: 200, checkpoint_every: 50, take_mig: true}   # TrainConfig fields
    scheduler: {requeue_s: 120, reboot_s: 300, max_requeues: 3}
    schedule:
      - {name: gpu-lost, at: {step: 120}, fault: xid, server: random, gpu: random, xid: 79}
    expect:
      - {job_completes: true}
      - {resumes_within_min: 15}
      - {event: {fault: gpu-lost, kind: lease_end}}
    study: {...}                   # optional: checkpoint-interval study (study.py)
    storage:                       # optional: the workload's data on the twin's storage
      lustre_mount: true           # mount the twin's Lustre (FUSE) under OUT/lustre for the drill
      checkpoints: lustre          # checkpoint files on that mount (default: local, OUT/checkpoints)
      stripe_count: 4              # lfs setstripe -c on the checkpoint and dataset directories
      dataset: {objects: 32, object_kib: 512, bucket: data, prefix: train/, workers: 4}
                                   # made (seeded) in the twin's S3 gateway, staged into the mount with
                                   # `twin stage`'s job, then read by the training (needs ceph and lustre)

`at`: `step` (before that step starts), `modelled_min` (the first step boundary at or after that
job time), `checkpoint` (half-way through writing checkpoint N's data), `staged_pct` (once that
share of the dataset's bytes is staged) or `wall_s` (wall seconds after the run starts: not
reproducible, flagged in the report).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from emulator.errors import BadInput
from workloads.drill.expectations import CHECKS
from workloads.train.config import TrainConfig, TrainConfigError

FAULTS = {
    "xid": "an Xid on a GPU (GpuNode.InjectFault)",
    "reboot": "a node reboot (GpuNode.RebootNode)",
    "link": "a fabric cable down or up (Fabric.SetPortState)",
    "switch": "a fabric switch lost: every cabled port disabled (or restored)",
    "oss": "a Lustre OSS fails (needs `twin up --lustre`): `daemon: ossNN` (default the first), `mode: kill` "
           "(-9, the supervisor restarts it) or `failover` (stays down, its partner serves its OSTs, as "
           "`twin lustre fault oss-kill`); `restore: true` brings a failed-over OSS back (failback)",
    "mds": "a Lustre MDS fails (needs `twin up --lustre`)",
    "osd": "Ceph OSDs fail: `osd: ID` or `osds: [IDs]`, `mode: kill` (crash, restarted) or `stop` (stays down); "
           "an operator's `out` (CRUSH backfills their shards elsewhere), `in` or `start` (needs `twin up --ceph`)",
    "preempt": "a regression job through the real Slurm needs the job's nodes (needs `workload.scheduler: slurm`): "
               "`nodes: N` (default: the job's), `duration_min: M` modelled minutes it holds them",
}
BACKENDS = ("model", "slurm")  # workload.scheduler: the drill requeues (model) or the real Slurm does
EXPECTATIONS = tuple(CHECKS)
AT = ("step", "modelled_min", "checkpoint", "staged_pct", "wall_s")
STORAGE_KEYS = ("lustre_mount", "checkpoints", "stripe_count", "dataset")
DATASET_DEFAULTS: dict[str, Any] = {"objects": 32, "object_kib": 512, "bucket": "drill-data", "prefix": "train/",
                                    "workers": 4}
SCHEDULER_DEFAULTS = {"requeue_s": 120.0, "reboot_s": 300.0, "max_requeues": 3}


class DrillError(BadInput):
    pass


@dataclass(frozen=True)
class Fault:
    name: str
    kind: str
    at: dict[str, float]
    args: dict[str, Any]


@dataclass(frozen=True)
class Drill:
    name: str
    path: str
    description: str
    topology: str
    twin: dict[str, Any]
    workload: TrainConfig | None
    take_mig: bool
    scheduler: dict[str, float]
    schedule: list[Fault]
    expect: list[dict[str, Any]]
    study: dict[str, Any] | None = None
    raw: dict[str, Any] = field(default_factory=dict)
    backend: str = "model"  # workload.scheduler: "model" (the drill requeues) or "slurm" (sbatch, real requeue)
    storage: dict[str, Any] = field(default_factory=dict)


def load(path: str | Path) -> Drill:
    p = Path(path)
    try:
        doc = yaml.safe_load(p.read_text())
    except OSError as e:
        raise DrillError(f"{p}: cannot read the drill file ({e.strerror})") from None
    except yaml.YAMLError as e:
        raise DrillError(f"{p}: not valid YAML: {e}") from None
    if not isinstance(doc, dict):
        raise DrillError(f"{p}: a drill is a mapping with name, topology, workload, schedule, expect")
    return parse(doc, str(p))


def _where(path: str, what: str) -> str:
    return f"{path}: {what}"


def parse(doc: dict[str, Any], path: str = "<drill>") -> Drill:
    known = {"name", "description", "topology", "twin", "workload", "scheduler", "schedule", "expect", "study",
             "storage"}
    extra = sorted(set(doc) - known)
    if extra:
        raise DrillError(_where(path, f"unknown key(s) {', '.join(extra)}; known: {', '.join(sorted(known))}"))
    for key in ("name", "topology"):
        if not isinstance(doc.get(key), str) or not doc[key]:
            raise DrillError(_where(path, f"'{key}' is required (a string)"))
    twin = doc.get("twin") or {}
    if not isinstance(twin, dict) or set(twin) - {"fabric", "lustre", "ceph", "network"}:
        raise DrillError(_where(path, "'twin' takes fabric, lustre, ceph, network"))
    wl = dict(doc.get("workload") or {})
    take_mig = bool(wl.pop("take_mig", False))
    backend = wl.pop("scheduler", "model")
    if backend not in BACKENDS:
        raise DrillError(_where(path, f"workload.scheduler {backend!r}: one of {', '.join(BACKENDS)}"))
    workload = _workload(wl, doc, path) if wl or doc.get("schedule") else None
    storage = _storage(doc.get("storage"), twin, workload, backend, path)
    sched = _scheduler(doc.get("scheduler") or {}, path)
    faults: list[Fault] = []
    for i, f in enumerate(doc.get("schedule") or []):
        fault = _fault(i, f, {x.name for x in faults}, path)
        _check_fault_fits(fault, f"schedule[{i}] ({fault.name})", twin, workload, storage, backend, path)
        faults.append(fault)
    expect = _expectations(doc.get("expect") or [], {f.name for f in faults}, path)
    study = doc.get("study")
    if study is not None and not isinstance(study, dict):
        raise DrillError(_where(path, "'study' is a mapping"))
    if workload is None and study is None:
        raise DrillError(_where(path, "a drill needs a workload (with a schedule) or a study"))
    return Drill(doc["name"], path, str(doc.get("description", "")).strip(), doc["topology"], twin, workload,
                 take_mig, sched, faults, expect, study, doc, backend, storage)


def _workload(wl: dict[str, Any], doc: dict[str, Any], path: str) -> TrainConfig:
    """The `workload:` options (take_mig and scheduler taken out) as a TrainConfig named after the drill."""
    bad = sorted(set(wl) - set(TrainConfig.__dataclass_fields__))
    if bad:
        raise DrillError(_where(path, f"workload: unknown option(s) {', '.join(bad)}"))
    for k, v in wl.items():
        if k == "params" and isinstance(v, str):
            try:
                wl[k] = float(v)
            except ValueError:
                raise DrillError(_where(path, f"workload.params {v!r} is not a number")) from None
    try:
        return TrainConfig(**{"job_id": doc["name"].replace("_", "-"), **wl})
    except (TrainConfigError, TypeError) as e:
        raise DrillError(_where(path, f"workload: {e}")) from None


def _scheduler(given: dict[str, Any], path: str) -> dict[str, float]:
    sched = dict(SCHEDULER_DEFAULTS)
    for k, v in given.items():
        if k not in SCHEDULER_DEFAULTS or not isinstance(v, int | float) or v < 0:
            raise DrillError(_where(path, f"scheduler.{k}: known keys {', '.join(SCHEDULER_DEFAULTS)}, values >= 0"))
        sched[k] = float(v)
    return sched


def _fault(i: int, entry: Any, names: set[str], path: str) -> Fault:
    """Schedule entry i: its name (unique among `names`), kind and one `at` point; the rest are its args."""
    where = f"schedule[{i}]"
    if not isinstance(entry, dict):
        raise DrillError(_where(path, f"{where}: a mapping with name, at, fault"))
    f = dict(entry)
    name, kind, at = f.pop("name", f"fault-{i + 1}"), f.pop("fault", None), f.pop("at", None)
    if not isinstance(kind, str) or kind not in FAULTS:
        raise DrillError(_where(path, f"{where}: fault {kind!r}; choose one of {', '.join(FAULTS)}"))
    if not isinstance(name, str):
        raise DrillError(_where(path, f"{where}: the name {name!r} is not a string"))
    if name in names:
        raise DrillError(_where(path, f"{where}: the name {name!r} is used twice"))
    if not isinstance(at, dict) or len(at) != 1 or next(iter(at)) not in AT \
            or not isinstance(next(iter(at.values())), int | float) or next(iter(at.values())) < 0:
        raise DrillError(_where(path, f"{where} ({name}): 'at' is one of {{step: N}}, {{modelled_min: X}}, "
                                      f"{{checkpoint: N}}, {{staged_pct: X}}, {{wall_s: X}} with X >= 0"))
    return Fault(name, kind, {k: float(v) for k, v in at.items()}, f)


def _check_fault_fits(fault: Fault, where: str, twin: dict[str, Any], workload: TrainConfig | None,
                      storage: dict[str, Any], backend: str, path: str) -> None:
    """A fault's `at` and arguments make sense for this drill's workload, storage and twin."""
    kind, at, f = fault.kind, fault.at, fault.args
    if "checkpoint" in at and (workload is None or not workload.checkpoint_every
                               or int(at["checkpoint"]) % workload.checkpoint_every
                               or not 0 < int(at["checkpoint"]) <= workload.steps):
        raise DrillError(_where(path, f"{where}: 'at: {{checkpoint: N}}' needs a step the workload "
                                      "checkpoints at (a multiple of checkpoint_every, up to steps)"))
    if "staged_pct" in at and (not storage.get("dataset") or not 0 <= at["staged_pct"] <= 100):
        raise DrillError(_where(path, f"{where}: 'at: {{staged_pct: X}}' needs 'storage: {{dataset: "
                                      "...}}' and 0 <= X <= 100"))
    if kind in ("oss", "mds") and not twin.get("lustre"):
        raise DrillError(_where(path, f"{where}: Lustre faults need 'twin: {{lustre: true}}'"))
    if kind == "osd" and not twin.get("ceph"):
        raise DrillError(_where(path, f"{where}: OSD faults need 'twin: {{ceph: true}}'"))
    if kind == "osd" and f.get("mode", "kill") not in ("kill", "stop", "start", "out", "in"):
        raise DrillError(_where(path, f"{where}: an osd fault's mode is kill, stop, start, out or in"))
    if kind == "oss" and f.get("mode", "kill") not in ("kill", "failover"):
        raise DrillError(_where(path, f"{where}: an oss fault's mode is kill or failover"))
    if kind == "xid" and not isinstance(f.get("xid"), int):
        raise DrillError(_where(path, f"{where}: an xid fault needs 'xid: N'"))
    if kind == "switch" and not f.get("switch"):
        raise DrillError(_where(path, f"{where}: a switch fault needs 'switch: NAME'"))
    if kind == "link" and not f.get("system"):
        raise DrillError(_where(path, f"{where}: a link fault needs 'system' (and 'port')"))
    if kind == "preempt" and backend != "slurm":
        raise DrillError(_where(path, f"{where}: preemption needs 'workload: {{scheduler: slurm}}'"))
    if kind in ("link", "switch") and not twin.get("fabric"):
        raise DrillError(_where(path, f"{where}: fabric faults need 'twin: {{fabric: true}}'"))


def _expectations(expect: Any, names: set[str], path: str) -> list[dict[str, Any]]:
    if not isinstance(expect, list):
        raise DrillError(_where(path, "'expect' is a list"))
    for i, e in enumerate(expect):
        if not isinstance(e, dict) or len(e) != 1 or next(iter(e)) not in EXPECTATIONS:
            raise DrillError(_where(path, f"expect[{i}]: one of {', '.join(EXPECTATIONS)}"))
        if "event" in e:
            ev = e["event"]
            if not isinstance(ev, dict) or ev.get("fault") not in names or not ev.get("kind"):
                raise DrillError(_where(path, f"expect[{i}]: event needs fault (a schedule name) and kind"))
    return expect


def dataset_spec(ds: Any, twin: dict[str, Any], path: str) -> dict[str, Any]:
    """A drill's `storage.dataset`, with DATASET_DEFAULTS filled in; staged from the S3 gateway into the
    Lustre mount, so the twin needs both."""
    if not isinstance(ds, dict) or set(ds) - set(DATASET_DEFAULTS):
        raise DrillError(_where(path, f"storage.dataset takes {', '.join(DATASET_DEFAULTS)}"))
    ds = {**DATASET_DEFAULTS, **ds}
    if not twin.get("ceph") or not twin.get("lustre"):
        raise DrillError(_where(path, "storage.dataset is staged from the S3 gateway: it needs 'twin: {ceph: "
                                      "true, lustre: true}'"))
    for k in ("objects", "object_kib", "workers"):
        if not isinstance(ds[k], int) or ds[k] < 1:
            raise DrillError(_where(path, f"storage.dataset.{k}: an integer >= 1"))
    if not isinstance(ds["bucket"], str) or not ds["bucket"] or not isinstance(ds["prefix"], str):
        raise DrillError(_where(path, "storage.dataset: bucket and prefix are strings"))
    return ds


def _storage(st: Any, twin: dict[str, Any], workload: TrainConfig | None, backend: str, path: str) -> dict[str, Any]:
    if st is None:
        return {}
    if not isinstance(st, dict) or set(st) - set(STORAGE_KEYS):
        raise DrillError(_where(path, f"'storage' is a mapping of {', '.join(STORAGE_KEYS)}"))
    out = dict(st)
    if backend != "model":
        raise DrillError(_where(path, "'storage' needs the drill's own scheduler (workload.scheduler: model)"))
    if out.get("checkpoints", "local") not in ("local", "lustre"):
        raise DrillError(_where(path, "storage.checkpoints: local or lustre"))
    if out.get("checkpoints") == "lustre" or out.get("dataset"):
        out["lustre_mount"] = True
    if out.get("lustre_mount") and not twin.get("lustre"):
        raise DrillError(_where(path, "storage on the Lustre mount needs 'twin: {lustre: true}'"))
    sc = out.setdefault("stripe_count", 4)
    if not isinstance(sc, int) or sc == 0 or sc < -1:
        raise DrillError(_where(path, "storage.stripe_count: >= 1, or -1 (all OSTs)"))
    if out.get("dataset") is not None:
        out["dataset"] = dataset_spec(out["dataset"], twin, path)
    if workload is None and out:
        raise DrillError(_where(path, "'storage' needs a workload"))
    return out
