"""A drill's expectations, checked against its report (pure). Each answer names the expectation,
whether it held, and why, so a failed drill says exactly what went wrong."""

from __future__ import annotations

from typing import Any


def check(expect: list[dict[str, Any]], report: dict[str, Any]) -> list[dict[str, Any]]:
    return [_one(e, report) for e in expect]


def _res(e: dict[str, Any], ok: bool, why: str) -> dict[str, Any]:
    name, value = next(iter(e.items()))
    return {"expectation": name, "value": value, "passed": bool(ok), "why": why}


def _one(e: dict[str, Any], r: dict[str, Any]) -> dict[str, Any]:
    name, v = next(iter(e.items()))
    m = r.get("metrics", {})
    failures = r.get("failures", [])
    if name == "job_completes":
        done = r.get("final", {}).get("status") == "completed"
        return _res(e, done == bool(v), f"the job {'completed' if done else 'did not complete'} "
                    f"(final step {r.get('final', {}).get('step')}: {r.get('final', {}).get('reason')})")
    if name == "resumes_within_min":
        gaps = [f["resume_gap_s"] / 60 for f in failures if f.get("resume_gap_s") is not None]
        unresumed = [f["fault"] for f in failures if f.get("resume_gap_s") is None]
        worst = max(gaps, default=0.0)
        ok = worst <= float(v) and not unresumed
        why = f"slowest resume {worst:.1f} modelled min (limit {v})" if gaps else "no failure to resume from"
        if unresumed:
            why += f"; never resumed after {', '.join(unresumed)}"
        return _res(e, ok, why)
    if name == "no_checkpoint_lost":
        lost = r.get("checkpoints", {}).get("lost", [])
        wrong = [f for f in failures if f.get("resumed_from") is not None
                 and f["resumed_from"] != f.get("last_checkpoint")]
        ok = not lost and not wrong
        why = "every checkpoint written is complete and each resume used the latest" if ok else \
            (f"lost checkpoints {lost}" if lost else "") + \
            "".join(f"; resumed from {f['resumed_from']} though {f['last_checkpoint']} existed" for f in wrong)
        return _res(e, ok == bool(v), why)
    if name == "goodput_at_least":
        g = m.get("goodput", 0.0)
        return _res(e, g >= float(v), f"goodput {g:.4f} (useful {m.get('useful_s', 0):.0f} s of "
                    f"{m.get('wall_s', 0):.0f} s modelled) vs at least {v}")
    if name == "failures":
        n = len(failures)
        return _res(e, n == int(v), f"{n} job failure(s), expected {v}")
    if name == "failure_reason_contains":
        reasons = [f.get("reason", "") for f in failures]
        ok = any(str(v).lower() in x.lower() for x in reasons)
        return _res(e, ok, f"failure reasons: {reasons or 'none'}")
    if name == "event":
        fault = next((f for f in r.get("faults", []) if f["name"] == v["fault"]), None)
        if fault is None:
            return _res(e, False, f"fault {v['fault']!r} was never injected")
        seen = fault.get("observed", [])
        ok = v["kind"] in seen
        return _res(e, ok, f"{v['fault']} produced {', '.join(seen) or 'no watched event'}; wanted {v['kind']}")
    if name == "throughput_drop_at_least_pct":
        drop = m.get("max_throughput_drop_pct", 0.0)
        return _res(e, drop >= float(v), f"largest modelled tokens/s drop {drop:.1f} % (at least {v} %)")
    if name == "optimum_near_daly_pct":
        s = r.get("study") or {}
        if not s:
            return _res(e, False, "the drill has no study")
        off = abs(s["best_interval_s"] - s["daly_s"]) / s["daly_s"] * 100
        return _res(e, off <= float(v), f"best sampled interval {s['best_interval_s'] / 60:.1f} min, Daly optimum "
                    f"{s['daly_s'] / 60:.1f} min: {off:.0f} % apart (limit {v} %)")
    if name == "requeues":
        sched = r.get("scheduler") or {}
        if sched.get("kind") != "slurm":
            return _res(e, False, "requeues are counted by Slurm: the drill needs 'workload: {scheduler: slurm}'")
        n = int(sched.get("requeues", 0))
        return _res(e, n == int(v), f"Slurm requeued the job {n} time(s), expected {v}")
    if name == "stage_completes":
        st = r.get("stage")
        if not st:
            return _res(e, False, "the drill staged no dataset (storage.dataset)")
        ok = not st["failed"] and st["listed"] == st["objects"] > 0 \
            and st["verified_after_stage"] == st["objects"] and st["copied"] + st["skipped"] == st["listed"]
        why = (f"{st['copied'] + st['skipped']} of {st['objects']} objects staged ({st['copied']} copied), "
               f"{st['verified_after_stage']} verified against their MD5 after staging"
               + (f"; failed: {st['failed']}" if st["failed"] else "")
               + (f"; mismatched: {st['mismatched'][:3]}" if st["mismatched"] else ""))
        return _res(e, ok == bool(v), why)
    if name == "stage_retries_at_most":
        st = r.get("stage")
        if not st:
            return _res(e, False, "the drill staged no dataset (storage.dataset)")
        n = len(st["retries"])
        return _res(e, n <= int(v), f"{n} stage retr{'y' if n == 1 else 'ies'} ({st['retry_wait_s']:.1f} s wall "
                    f"lost waiting to retry; limit {v})"
                    + (f": {', '.join(x['key'] + ' ' + x['error'][:60] for x in st['retries'][:3])}" if n else ""))
    if name == "dataset_reads_ok":
        sto = r.get("storage") or {}
        reads, errors = sto.get("dataset_reads", 0), sto.get("storage_failures", [])
        steps = sum(max(0, a["last_step"] - a["first_step"] + 1) for a in r.get("attempts", []))
        ok = reads >= steps > 0 and not [x for x in errors if "dataset" in x]
        return _res(e, ok == bool(v), f"{reads} dataset files read for {steps} steps computed"
                    + (f"; storage failures: {errors}" if errors else ", no read error"))
    return _res(e, False, f"unknown expectation {name!r}")
