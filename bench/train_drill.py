"""Benchmark the scheduler/training/drills issue on su-1024 (128 servers, loopback):

- `twin slurm up` on a running su-1024 twin: munged, slurmctld and 128 slurmd up and every node
  idle (target ≤ 60 s; the health check drains nobody on a healthy twin);
- a 1024-GPU, 1,000-step accelerated training run with one injected failure (Xid 79 at step 500),
  as a drill (target ≤ 120 s wall);
- the drill's HTML report rendered (target ≤ 5 s).

Run: .venv/bin/python bench/train_drill.py  (or `python -m bench --only train`)
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from emulator.client import Twin  # noqa: E402
from workloads.drill import report_html  # noqa: E402
from workloads.drill import runner as drill_runner  # noqa: E402
from workloads.drill.spec import parse  # noqa: E402

DRILL = {
    "name": "bench_su1024", "topology": "su-1024",
    "workload": {"gpus": 1024, "tp": 8, "pp": 4, "params": 70e9, "steps": 1000, "checkpoint_every": 100,
                 "time_scale": 100000, "take_mig": True},
    "schedule": [{"name": "gpu-lost", "at": {"step": 500}, "fault": "xid", "server": "random", "gpu": "random",
                  "xid": 79}],
    "expect": [{"job_completes": True}, {"failures": 1}, {"no_checkpoint_lost": True}],
}
TARGETS = {"slurm_up_s": 60.0, "run_s": 120.0, "render_s": 5.0}


def measure() -> dict:
    """One su-1024 twin: Slurm up (then down), then the drill on the same twin, then the render."""
    from services.slurm import lifecycle

    with tempfile.TemporaryDirectory(dir="/tmp") as tmp:  # short path: munge's socket name is limited
        out = Path(tmp)
        t0 = time.perf_counter()
        with Twin.up("su-1024", run_dir=out / "twin", timeout=120) as twin:
            up_s = time.perf_counter() - t0
            t1 = time.perf_counter()
            doc = lifecycle.up(twin.run, timeout=120)
            slurm_up_s = time.perf_counter() - t1
            nodes = doc.get("nodes", {})
            idle = sum(1 for s in nodes.values() if s == "idle")
            t1 = time.perf_counter()
            lifecycle.down(twin.run)
            slurm_down_s = time.perf_counter() - t1
            t1 = time.perf_counter()
            report = drill_runner.run(parse(DRILL), 1, out / "drill", run_dir=twin.run.path)
            run_s = time.perf_counter() - t1
        t2 = time.perf_counter()
        page = report_html.render(report)
        render_s = time.perf_counter() - t2
        (out / "report.html").write_text(page)
    return {"twin_up_s": up_s, "slurm_up_s": slurm_up_s, "slurm_startup_s": doc.get("startup_s"),
            "slurm_idle": idle, "slurm_nodes": len(nodes), "slurm_down_s": slurm_down_s, "run_s": run_s,
            "render_s": render_s, "page_kib": len(page) // 1024, "passed": report["passed"],
            "metrics": report["metrics"]}


def rows(r: dict) -> list[tuple[str, str, str, bool]]:
    return [
        ("su-1024 twin slurm up: 128 slurmd, nodes idle", f"{r['slurm_up_s']:.1f} s ({r['slurm_idle']}/"
         f"{r['slurm_nodes']} idle)", "<= 60 s", r["slurm_up_s"] <= TARGETS["slurm_up_s"]
         and r["slurm_idle"] == r["slurm_nodes"] == 128),
        ("1024-GPU 1000-step run, 1 Xid 79 failure", f"{r['run_s']:.1f} s wall (drill passed={r['passed']})",
         "<= 120 s", r["run_s"] <= TARGETS["run_s"] and r["passed"]),
        ("its report rendered (HTML)", f"{r['render_s']:.3f} s ({r['page_kib']} KiB)", "<= 5 s",
         r["render_s"] <= TARGETS["render_s"]),
    ]


def main() -> int:
    r = measure()
    for name, value, target, ok in rows(r):
        print(f"{name:<48} {value:<40} target {target:<10} {'OK' if ok else 'MISSED'}")
    m = r["metrics"]
    print(f"(twin up su-1024 {r['twin_up_s']:.1f} s; slurm down {r['slurm_down_s']:.1f} s; modelled: "
          f"{m['wall_s'] / 3600:.2f} h elapsed, goodput {m['goodput']:.4f}, checkpoint overhead "
          f"{m['checkpoint_overhead']:.3%}, {m['time_lost_s'] / 60:.1f} min lost to the failure)")
    return 0 if all(ok for *_, ok in rows(r)) else 1


if __name__ == "__main__":
    raise SystemExit(main())
