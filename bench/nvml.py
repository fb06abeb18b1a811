"""The twin's libnvidia-ml.so.1 (native/nvml/): how many NVML calls a pynvml loop makes per second,
and where the time of one call goes.

On a loopback mini twin, a worker process (the library is loaded by the process's dynamic linker,
so it has its own LD_LIBRARY_PATH) measures, each for a fixed time:
- pynvml: the four queries a monitor makes per GPU (temperature, power, utilization, memory)
  round-robin over the 8 GPUs, with the library's default snapshot TTL (250 ms);
- ctypes: the same C call (nvmlDeviceGetTemperature) without pynvml's wrapper: the library's own
  cost plus ctypes';
- C: that call in a C loop (native/nvml/tools/callrate.c): the library's own cost;
- refresh: pynvml calls with CLUSTERTWIN_NVML_TTL_MS=0, so each one fetches and parses the node's
  page (GET /nvml from the daemon): the cost of a refresh.

    python -m bench --only nvml          (python -m bench.nvml --worker SECONDS: one worker's figures)
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_CALLS_S = 5000
WORK_S = 2.0


def _loop(fn, seconds: float) -> float:
    """Calls of fn() per second over about `seconds`."""
    n, t0 = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - t0) < seconds:
        for _ in range(200):
            fn()
        n += 200
    return n / elapsed


def worker(seconds: float) -> dict[str, float]:
    import ctypes

    import pynvml as n

    n.nvmlInit()
    handles = [n.nvmlDeviceGetHandleByIndex(i) for i in range(n.nvmlDeviceGetCount())]
    queries = [lambda h: n.nvmlDeviceGetTemperature(h, 0), n.nvmlDeviceGetPowerUsage,
               n.nvmlDeviceGetUtilizationRates, n.nvmlDeviceGetMemoryInfo]
    calls = [(q, h) for h in handles for q in queries]
    state = {"i": 0}

    def one() -> None:
        q, h = calls[state["i"] % len(calls)]
        state["i"] += 1
        q(h)

    out = {"pynvml_calls_s": _loop(one, seconds)}
    fn, temp = n._nvmlGetFunctionPointer("nvmlDeviceGetTemperature"), ctypes.c_uint()
    out["ctypes_calls_s"] = _loop(lambda: fn(handles[0], 0, ctypes.byref(temp)), seconds)
    os.environ["CLUSTERTWIN_NVML_TTL_MS"] = "0"   # read by the library at each call
    out["refresh_calls_s"] = _loop(one, seconds / 2)
    n.nvmlShutdown()
    return out


def measure(repeats: int) -> dict[str, float]:
    from emulator.client import Twin
    from services.gpu_node.nvml_cli import LIB_DIR

    subprocess.run(["make", "-s", "-C", str(LIB_DIR.parent)], check=True)
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        twin = Twin.up("mini", run_dir=Path(tmp) / "nvml")
        try:
            address = twin.daemon("gpu001").metrics.split("//")[1].split("/")[0]
            env = {**os.environ, "LD_LIBRARY_PATH": str(LIB_DIR), "CLUSTERTWIN_NVML": address}
            env.pop("CLUSTERTWIN_NVML_TTL_MS", None)
            for _ in range(repeats):
                out = subprocess.run([sys.executable, "-m", "bench.nvml", "--worker", str(WORK_S)], env=env,
                                     capture_output=True, text=True, check=True).stdout
                c = subprocess.run([str(LIB_DIR / "callrate"), str(WORK_S)], env=env, capture_output=True, text=True,
                                   check=True).stdout
                runs.append(json.loads(out) | {"c_calls_s": float(c)})
        finally:
            twin.down()
    figures = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    figures["load_1min"] = os.getloadavg()[0]
    return figures


def rows(repeats: int) -> list[tuple[str, str, str, bool]]:
    f = measure(repeats)
    pynvml_us, ctypes_us, c_us, refresh_us = (1e6 / f[k] for k in ("pynvml_calls_s", "ctypes_calls_s", "c_calls_s",
                                                                    "refresh_calls_s"))
    print(f"NVML (libnvidia-ml.so.1 against a loopback mini twin's gpu001; {repeats} runs, medians; "
          f"load {f['load_1min']:.1f}):")
    return [
        ("pynvml query loop", f"{f['pynvml_calls_s']:,.0f} calls/s ({pynvml_us:.1f} us/call)", f">= {TARGET_CALLS_S:,}",
         f["pynvml_calls_s"] >= TARGET_CALLS_S),
        ("  of which the C call via ctypes", f"{ctypes_us:.2f} us/call ({f['ctypes_calls_s']:,.0f} calls/s)", "-",
         True),
        ("    the library itself (a C loop)", f"{c_us * 1000:.0f} ns/call ({f['c_calls_s']:,.0f} calls/s)", "-", True),
        ("    ctypes", f"{ctypes_us - c_us:.2f} us/call", "-", True),
        ("  pynvml's Python wrapper", f"{pynvml_us - ctypes_us:.2f} us/call", "-", True),
        ("snapshot refresh (GET /nvml + parse)", f"{refresh_us:.0f} us ({f['refresh_calls_s']:,.0f}/s, TTL 0)", "-",
         True),
    ]


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":
        print(json.dumps(worker(float(sys.argv[2]))))
    else:
        from bench.report import report
        report(rows(int(sys.argv[1]) if len(sys.argv) > 1 else 3))
