"""How long the fabric manager takes to bring back an ibsim or OpenSM killed with -9 under it, on
`twin up TOPOLOGY --fabric`: from the kill until the manager serves a fabric read back from the new
process (its log says "restarted" and GetHealth is MASTER again).

    sudo .venv/bin/python -m bench.fabric_recovery [--topology rack] [--times 3]
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import tempfile
import time
from pathlib import Path

from bench.options import parse_options, print_figures
from emulator.client import Twin


def _children(pid: int) -> dict[int, str]:
    out = {}
    for task in Path(f"/proc/{pid}/task").glob("*"):
        for child in (task / "children").read_text().split():
            try:
                out[int(child)] = Path(f"/proc/{child}/comm").read_text().strip()
            except OSError:
                pass
    return out


def _recover(twin: Twin, fabric: object, victim: str, timeout: float = 120.0) -> float:
    pid = json.loads(twin.run.daemons.read_text())["daemons"]["fabric"]["pid"]
    log = twin.run.logs / "fabric.log"
    restarts = log.read_text().count(" restarted;")
    (old,) = [p for p, comm in _children(pid).items() if comm == victim]
    t0 = time.perf_counter()
    os.kill(old, signal.SIGKILL)
    while time.perf_counter() - t0 < timeout:
        if log.read_text().count(" restarted;") > restarts and \
                fabric.call("GetHealth").sm_state == "MASTER":   # type: ignore[attr-defined]
            return time.perf_counter() - t0
        time.sleep(0.02)
    raise TimeoutError(f"{victim} was not restarted within {timeout:.0f} s")


def measure(topology: str = "rack", times: int = 3) -> dict[str, float]:
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp, Twin.up(topology, run_dir=Path(tmp) / "t", fabric=True,
                                                       timeout=180) as twin, twin.fabric() as fabric:
        for victim in ("opensm", "ibsim"):
            runs = []
            for _ in range(times):
                time.sleep(11.0)   # past the backoff's window: each kill is a first one, restarted at once
                runs.append(_recover(twin, fabric, victim))
            out[f"{victim}_kill_to_serving_s"] = statistics.median(runs)
    return out


def main() -> None:
    args = parse_options(__doc__, topology="rack", times=3)
    print_figures(measure(args.topology, args.times))


if __name__ == "__main__":
    main()
