"""Benchmark `twin train --real` (issue 18 part 2) on a rack twin (`--network netns --lustre`, root):

- a 6-rank real job (torchrun + gloo, 2 ranks on each of gpu001-gpu003, 300 steps, checkpoints on
  the Lustre mount) without faults: ranks started, steps/s, the measured 1 MiB all-reduce against
  the collective model's prediction for the same scaled fabric (ratio);
- the same job with ib-leaf01 down (rails 0-3 of every server): the ranks take the rails left, and
  its all-reduce against the healthy one's, beside the model's ratio for the same change;
- the real_node_cut drill on the same twin: gpu003 cut off at step 120, the time from the fault to
  training resumed (gloo's 20 s timeout, then torchrun's re-rendezvous and restart);
- the real_leaf_lost drill: ib-leaf01 powered off at step 100 of a running job; the group fails, the
  job is requeued on the rails left, the time from the fault to training resumed;
- the real_gpu_lost drill: Xid 79 on a GPU of gpu003 at step 120, the time from the fault to training
  resumed (the rank's next NVML check, then the job requeued on gpu001-gpu002 from its checkpoint).

Holds the machine's netns lock while its twin is up. One run each: it takes minutes, and on two
shared cores every figure moves with the load (printed with them).

Run: .venv/bin/python -m bench --only train-real  (or .venv/bin/python bench/train_real.py)
"""

from __future__ import annotations

import fcntl
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from emulator.client import Twin  # noqa: E402
from workloads.train import real_drill  # noqa: E402
from workloads.train.real_cli import run_real  # noqa: E402
from workloads.train.real_launch import RealOptions  # noqa: E402

NETNS_LOCK = "/tmp/clustertwin-netns.lock"
DRILLS = Path(__file__).resolve().parents[1] / "topologies" / "drills"


def measure() -> dict:
    from services.lustre.client.mount import mount_background

    with tempfile.TemporaryDirectory(dir="/tmp") as tmp, open(NETNS_LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        out = Path(tmp)
        with Twin.up("rack", run_dir=out / "twin", network="netns", lustre=True, ceph=True, timeout=120) as twin:
            mount_background(twin.run.path, str(out / "hot"))
            load0 = os.getloadavg()[0]
            plain = run_real(twin, RealOptions(steps=300, per_server=2, nodes=3, checkpoint_every=50,
                                               job_id="bench-real"), None)
            twin.network().switch_down("ib-leaf01")
            try:
                leaf = run_real(twin, RealOptions(steps=300, per_server=2, nodes=3, checkpoint_every=50,
                                                  job_id="bench-real-leaf-down"), None)
            finally:
                twin.network().switch_up("ib-leaf01")
            drill = real_drill.run(DRILLS / "real_node_cut.yaml", out / "drill", twin.run.path, log=lambda _m: None)
            lost = real_drill.run(DRILLS / "real_gpu_lost.yaml", out / "lost", twin.run.path, log=lambda _m: None)
            mid = real_drill.run(DRILLS / "real_leaf_lost.yaml", out / "mid", twin.run.path, log=lambda _m: None)
            load1 = os.getloadavg()[0]
    return {"plain": plain, "leaf": leaf, "drill": drill, "lost": lost, "mid": mid, "load": (load0, load1)}


def rows(r: dict) -> list[tuple[str, str, str, bool]]:
    p, d, g, m = r["plain"], r["drill"]["result"], r["lost"]["result"], r["mid"]["result"]
    ar = p.get("allreduce") or {}
    ratio = ar.get("measured_over_predicted")
    lar = r["leaf"].get("allreduce") or {}
    slower = lar["measured_s"] / ar["measured_s"] if lar.get("measured_s") and ar.get("measured_s") else 0.0
    model = (lar["predicted"]["time_s"] / ar["predicted"]["time_s"]
             if (lar.get("predicted") or {}).get("time_s") and (ar.get("predicted") or {}).get("time_s") else 0.0)
    return [
        ("real job: ranks started, steps/s (6 ranks, gloo)", f"{p['ranks_started']}, "
         f"{p['steps_per_s'] or 0:.1f} steps/s ({p['status']})", "completes", p["status"] == "completed"),
        ("1 MiB all-reduce, measured / collective model", f"{ar.get('measured_s', 0) * 1e3:.1f} ms / "
         f"{(ar.get('predicted') or {}).get('time_s', 0) * 1e3:.1f} ms = {ratio or 0:.2f} (rails "
         f"{ar.get('channels')})", "a ratio", bool(ratio)),
        ("ib-leaf01 down: the same job's 1 MiB all-reduce", f"{lar.get('measured_s', 0) * 1e3:.1f} ms over rails "
         f"{lar.get('channels')} = {slower:.2f}x the healthy one (model {model:.2f}x; {r['leaf']['status']})",
         "slower, completes", slower > 1 and r["leaf"]["status"] == "completed"),
        ("gpu003 cut: fault to training resumed", f"{d.get('fault_to_resumed_s') or 0:.1f} s (ranks "
         f"{d['ranks_started']}, from step {d.get('resumed_from_step')})", "resumes", r["drill"]["passed"]),
        ("gpu003 Xid 79: NVML GPU_IS_LOST, fault to training resumed", f"{g.get('fault_to_resumed_s') or 0:.1f} s "
         f"(ranks {g['ranks_started']}, requeued from step {g.get('resumed_from_step')})", "resumes",
         r["lost"]["passed"]),
        ("ib-leaf01 off mid-job: fault to training resumed", f"{m.get('fault_to_resumed_s') or 0:.1f} s (requeued on "
         f"rails {(m.get('allreduce_last') or {}).get('channels')}, from step {m.get('resumed_from_step')})",
         "resumes", r["mid"]["passed"]),
    ]


def main() -> int:
    from bench.report import report

    r = measure()
    report(rows(r))
    print(f"(load average {r['load'][0]:.1f} before, {r['load'][1]:.1f} after)")
    return 0 if all(ok for *_, ok in rows(r)) else 1


if __name__ == "__main__":
    raise SystemExit(main())
