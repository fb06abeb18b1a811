"""Benchmark: a 1024-GPU (su-1024, 128 servers, loopback) 1,000-step accelerated training run with
one injected failure (Xid 79 at step 500), as a drill; prints wall times against the targets
(run ≤ 120 s, report render ≤ 5 s). Run: .venv/bin/python bench/train_drill.py"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from emulator.client import Twin  # noqa: E402
from services.drill import report_html  # noqa: E402
from services.drill import runner as drill_runner  # noqa: E402
from services.drill.spec import parse  # noqa: E402

DRILL = {
    "name": "bench_su1024", "topology": "su-1024",
    "workload": {"gpus": 1024, "tp": 8, "pp": 4, "params": 70e9, "steps": 1000, "checkpoint_every": 100,
                 "time_scale": 100000, "take_mig": True},
    "schedule": [{"name": "gpu-lost", "at": {"step": 500}, "fault": "xid", "server": "random", "gpu": "random",
                  "xid": 79}],
    "expect": [{"job_completes": True}, {"failures": 1}, {"no_checkpoint_lost": True}],
}


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        t0 = time.perf_counter()
        with Twin.up("su-1024", run_dir=out / "twin", timeout=120) as twin:
            up_s = time.perf_counter() - t0
            t1 = time.perf_counter()
            report = drill_runner.run(parse(DRILL), 1, out / "drill", run_dir=twin.run.path)
            run_s = time.perf_counter() - t1
        t2 = time.perf_counter()
        page = report_html.render(report)
        render_s = time.perf_counter() - t2
        (out / "report.html").write_text(page)
    m = report["metrics"]
    print(f"twin up su-1024 (128 servers):           {up_s:6.1f} s wall")
    print(f"1024-GPU 1000-step run, 1 Xid 79 failure: {run_s:6.1f} s wall (target <= 120 s) "
          f"{'OK' if run_s <= 120 else 'SLOW'}; passed={report['passed']}")
    print(f"report render (HTML, {len(page) // 1024} KiB):            {render_s:6.3f} s wall (target <= 5 s) "
          f"{'OK' if render_s <= 5 else 'SLOW'}")
    print(f"modelled: {m['wall_s'] / 3600:.2f} h elapsed, goodput {m['goodput']:.4f}, checkpoint overhead "
          f"{m['checkpoint_overhead']:.3%}, {m['time_lost_s'] / 60:.1f} min lost to the failure")
    return 0 if report["passed"] and run_s <= 120 and render_s <= 5 else 1


if __name__ == "__main__":
    raise SystemExit(main())
