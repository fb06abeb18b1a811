"""The set calls over a Unix socket, the transport a process in an emulated host uses (there the
abstract @clustertwin-nvml; here a socket file, so no network namespace is needed): the endpoint
nvml_endpoint.serve_abstract serves, over a real node model and servicer, changes the model."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.nvml.conftest import nvml_env

CLIENT = """
import os, pynvml as n
n.nvmlInit()
h = n.nvmlDeviceGetHandleByIndex(3)
n.nvmlDeviceSetPowerManagementLimit(h, 400000)
n.nvmlDeviceSetPersistenceMode(h, 0)
try:
    n.nvmlDeviceSetPowerManagementLimit(h, 100000)
except n.NVMLError as e:
    print(e.value, n.nvmlDeviceGetPowerManagementLimit(h), n.nvmlDeviceGetPersistenceMode(h))
"""

SERVER = f"""
import asyncio, subprocess, sys, time
from services.gpu_node import nvml_control, nvml_endpoint, nvml_snapshot
from services.gpu_node.model import NodeModel
from services.gpu_node.servicer import GpuNodeServicer
from services.gpu_node.spec import NodeSpec

model = NodeModel(NodeSpec("gpu009", twin="nvml-test"), 0.0)
async def persist(events):
    pass
servicer = GpuNodeServicer(model, time.monotonic, persist)

async def main():
    set_call = lambda body: nvml_control.apply(servicer, model, body)
    server = await nvml_endpoint.serve_abstract(lambda: nvml_snapshot.render(model), set_call, name=sys.argv[1])
    client = await asyncio.to_thread(subprocess.run, [sys.executable, "-c", {CLIENT!r}], capture_output=True,
                                     text=True)
    server.close()
    g = model.gpu_info(3)
    print(client.stdout.strip(), g.power_limit_w, g.persistence_mode, client.stderr.strip()[-300:])

asyncio.run(main())
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="the set calls succeed only for root (as the driver's)")
def test_set_calls_over_a_unix_socket(nvml_lib: str, tmp_path: Path) -> None:
    sock = tmp_path / "nvml.sock"
    env = nvml_env(nvml_lib, str(sock)) | {"PYTHONPATH": os.pathsep.join(sys.path)}
    p = subprocess.run([sys.executable, "-c", SERVER, str(sock)], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    # INVALID_ARGUMENT for 100 W, the 400 W limit and persistence off read back; the model changed
    assert p.stdout.split()[:5] == ["2", "400000", "0", "400.0", "False"], p.stdout
