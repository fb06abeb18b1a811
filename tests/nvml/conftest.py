"""NVML tests: the gcc-built libnvidia-ml.so.1 (native/nvml/) loaded by real clients (pynvml, gpustat,
nvitop) in their own processes, against real GPU-server daemons."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from typing import Any

import pytest

from emulator.client import Twin
from services.gpu_node.nvml_cli import LIB_DIR


@pytest.fixture(scope="session")
def nvml_lib() -> str:
    """The library's directory, built (as `make install` does) if its sources changed."""
    subprocess.run(["make", "-s", "-C", str(LIB_DIR.parent)], check=True, capture_output=True)
    return str(LIB_DIR)


def http_address(twin: Twin, node: str) -> str:
    return twin.daemon(node).metrics.split("//")[1].split("/")[0]


def nvml_env(lib: str, address: str | None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES",
                                                              "CLUSTERTWIN_NVML")}
    env["LD_LIBRARY_PATH"] = lib
    env["CLUSTERTWIN_NVML_TTL_MS"] = "0"   # every call sees the daemon as it is now
    if address:
        env["CLUSTERTWIN_NVML"] = address
    return env | extra


ERR = """
def err(f):
    try:
        f()
        return 0
    except n.NVMLError as e:
        return e.value
"""


def run_pynvml(code: str, env: dict[str, str]) -> Any:
    """Run `code` (pynvml imported as n; it sets `out`) in a process of its own; `out` as JSON. The code
    may call `err(f)`: 0 if `f()` succeeds, else the NVML error's return code."""
    script = "import json, pynvml as n\nout = None\n" + ERR + textwrap.dedent(code) + "\nprint(json.dumps(out))\n"
    p = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.splitlines()[-1])
