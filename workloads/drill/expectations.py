"""A drill's expectations, checked against its report (pure). Each answer names the expectation,
whether it held, and why, so a failed drill says exactly what went wrong."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Verdict = tuple[bool, str]  # held, and why


def check(expect: list[dict[str, Any]], report: dict[str, Any]) -> list[dict[str, Any]]:
    return [_one(e, report) for e in expect]


def _one(e: dict[str, Any], r: dict[str, Any]) -> dict[str, Any]:
    name, value = next(iter(e.items()))
    judge = CHECKS.get(name)
    ok, why = judge(value, r) if judge else (False, f"unknown expectation {name!r}")
    return {"expectation": name, "value": value, "passed": bool(ok), "why": why}


def _job_completes(v: Any, r: dict[str, Any]) -> Verdict:
    final = r.get("final", {})
    done = final.get("status") == "completed"
    return done == bool(v), (f"the job {'completed' if done else 'did not complete'} "
                             f"(final step {final.get('step')}: {final.get('reason')})")


def _resumes_within_min(v: Any, r: dict[str, Any]) -> Verdict:
    failures = r.get("failures", [])
    gaps = [f["resume_gap_s"] / 60 for f in failures if f.get("resume_gap_s") is not None]
    unresumed = [f["fault"] for f in failures if f.get("resume_gap_s") is None]
    worst = max(gaps, default=0.0)
    why = f"slowest resume {worst:.1f} modelled min (limit {v})" if gaps else "no failure to resume from"
    if unresumed:
        why += f"; never resumed after {', '.join(unresumed)}"
    return worst <= float(v) and not unresumed, why


def _no_checkpoint_lost(v: Any, r: dict[str, Any]) -> Verdict:
    lost = r.get("checkpoints", {}).get("lost", [])
    wrong = [f for f in r.get("failures", []) if f.get("resumed_from") is not None
             and f["resumed_from"] != f.get("last_checkpoint")]
    ok = not lost and not wrong
    why = "every checkpoint written is complete and each resume used the latest" if ok else \
        (f"lost checkpoints {lost}" if lost else "") + \
        "".join(f"; resumed from {f['resumed_from']} though {f['last_checkpoint']} existed" for f in wrong)
    return ok == bool(v), why


def _goodput_at_least(v: Any, r: dict[str, Any]) -> Verdict:
    m = r.get("metrics", {})
    g = m.get("goodput", 0.0)
    return g >= float(v), (f"goodput {g:.4f} (useful {m.get('useful_s', 0):.0f} s of "
                           f"{m.get('wall_s', 0):.0f} s modelled) vs at least {v}")


def _failures(v: Any, r: dict[str, Any]) -> Verdict:
    n = len(r.get("failures", []))
    return n == int(v), f"{n} job failure(s), expected {v}"


def _failure_reason_contains(v: Any, r: dict[str, Any]) -> Verdict:
    reasons = [f.get("reason", "") for f in r.get("failures", [])]
    return any(str(v).lower() in x.lower() for x in reasons), f"failure reasons: {reasons or 'none'}"


def _event(v: Any, r: dict[str, Any]) -> Verdict:
    fault = next((f for f in r.get("faults", []) if f["name"] == v["fault"]), None)
    if fault is None:
        return False, f"fault {v['fault']!r} was never injected"
    seen = fault.get("observed", [])
    return v["kind"] in seen, f"{v['fault']} produced {', '.join(seen) or 'no watched event'}; wanted {v['kind']}"


def _throughput_drop_at_least_pct(v: Any, r: dict[str, Any]) -> Verdict:
    drop = r.get("metrics", {}).get("max_throughput_drop_pct", 0.0)
    return drop >= float(v), f"largest modelled tokens/s drop {drop:.1f} % (at least {v} %)"


def _optimum_near_daly_pct(v: Any, r: dict[str, Any]) -> Verdict:
    s = r.get("study") or {}
    if not s:
        return False, "the drill has no study"
    off = abs(s["best_interval_s"] - s["daly_s"]) / s["daly_s"] * 100
    return off <= float(v), (f"best sampled interval {s['best_interval_s'] / 60:.1f} min, Daly optimum "
                             f"{s['daly_s'] / 60:.1f} min: {off:.0f} % apart (limit {v} %)")


def _requeues(v: Any, r: dict[str, Any]) -> Verdict:
    sched = r.get("scheduler") or {}
    if sched.get("kind") != "slurm":
        return False, "requeues are counted by Slurm: the drill needs 'workload: {scheduler: slurm}'"
    n = int(sched.get("requeues", 0))
    return n == int(v), f"Slurm requeued the job {n} time(s), expected {v}"


NO_STAGE: Verdict = (False, "the drill staged no dataset (storage.dataset)")


def _stage_completes(v: Any, r: dict[str, Any]) -> Verdict:
    st = r.get("stage")
    if not st:
        return NO_STAGE
    ok = not st["failed"] and st["listed"] == st["objects"] > 0 \
        and st["verified_after_stage"] == st["objects"] and st["copied"] + st["skipped"] == st["listed"]
    why = (f"{st['copied'] + st['skipped']} of {st['objects']} objects staged ({st['copied']} copied), "
           f"{st['verified_after_stage']} verified against their MD5 after staging"
           + (f"; failed: {st['failed']}" if st["failed"] else "")
           + (f"; mismatched: {st['mismatched'][:3]}" if st["mismatched"] else ""))
    return ok == bool(v), why


def _stage_retries_at_most(v: Any, r: dict[str, Any]) -> Verdict:
    st = r.get("stage")
    if not st:
        return NO_STAGE
    n = len(st["retries"])
    return n <= int(v), (f"{n} stage retr{'y' if n == 1 else 'ies'} ({st['retry_wait_s']:.1f} s wall "
                         f"lost waiting to retry; limit {v})"
                         + (f": {', '.join(x['key'] + ' ' + x['error'][:60] for x in st['retries'][:3])}" if n else ""))


def _dataset_reads_ok(v: Any, r: dict[str, Any]) -> Verdict:
    sto = r.get("storage") or {}
    reads, errors = sto.get("dataset_reads", 0), sto.get("storage_failures", [])
    steps = sum(max(0, a["last_step"] - a["first_step"] + 1) for a in r.get("attempts", []))
    ok = reads >= steps > 0 and not [x for x in errors if "dataset" in x]
    return ok == bool(v), (f"{reads} dataset files read for {steps} steps computed"
                           + (f"; storage failures: {errors}" if errors else ", no read error"))


# the expectations a drill file may name (spec.py refuses any other)
CHECKS: dict[str, Callable[[Any, dict[str, Any]], Verdict]] = {
    "job_completes": _job_completes,
    "resumes_within_min": _resumes_within_min,
    "no_checkpoint_lost": _no_checkpoint_lost,
    "goodput_at_least": _goodput_at_least,
    "event": _event,
    "failure_reason_contains": _failure_reason_contains,
    "failures": _failures,
    "throughput_drop_at_least_pct": _throughput_drop_at_least_pct,
    "optimum_near_daly_pct": _optimum_near_daly_pct,
    "requeues": _requeues,
    "stage_completes": _stage_completes,
    "stage_retries_at_most": _stage_retries_at_most,
    "dataset_reads_ok": _dataset_reads_ok,
}
