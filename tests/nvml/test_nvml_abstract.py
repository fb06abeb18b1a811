"""The library's default address, the abstract socket @clustertwin-nvml, belongs to a network
namespace: a process in the namespace where a daemon serves it reads that daemon's node, a process
anywhere else finds no driver. (The whole netns twin: test_nvml_netns.py.)"""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from tests.conftest import skip_reason
from tests.nvml.conftest import nvml_env

QUERY = "import pynvml as n; n.nvmlInit(); print(n.nvmlDeviceGetUUID(n.nvmlDeviceGetHandleByIndex(0)))"

GONE = """
import pynvml as n, sys
n.nvmlInit()
print("ready", flush=True)
sys.stdin.readline()
try:
    n.nvmlDeviceGetCount()
    print(0)
except n.NVMLError as e:
    print(e.value)
"""

# In a fresh network namespace: the daemon's endpoint over a real node model, and a client beside it.
SERVER = f"""
import asyncio, subprocess, sys
from services.gpu_node import nvml_endpoint, nvml_snapshot
from services.gpu_node.model import NodeModel
from services.gpu_node.spec import NodeSpec

model = NodeModel(NodeSpec("gpu009", twin="nvml-test"), 0.0)

async def gone(server):   # a client initialised while the daemon answered, asking once it is gone
    client = await asyncio.create_subprocess_exec(sys.executable, "-c", {GONE!r}, stdin=asyncio.subprocess.PIPE,
                                                  stdout=asyncio.subprocess.PIPE)
    await client.stdout.readline()   # initialised
    server.close()
    await server.wait_closed()
    client.stdin.write(b"\\n")
    out, _ = await client.communicate()
    return out.decode().strip()

async def main():
    server = await nvml_endpoint.serve_abstract(lambda: nvml_snapshot.render(model))
    client = await asyncio.to_thread(subprocess.run, [sys.executable, "-c", {QUERY!r}], capture_output=True, text=True)
    code = await gone(server)
    print(model.spec.gpu_uuid(0), client.stdout.strip(), client.returncode, code, client.stderr.strip()[-300:])

asyncio.run(main())
"""


def test_abstract_socket_is_per_network_namespace(nvml_lib: str) -> None:
    reason = skip_reason("the abstract-socket test", [] if shutil.which("unshare") else ["unshare"], ["util-linux"])
    if reason:
        pytest.skip(reason)
    env = nvml_env(nvml_lib, None)
    inside = subprocess.run(["unshare", "--net", sys.executable, "-c", SERVER], env=env, capture_output=True,
                            text=True, timeout=60)
    assert inside.returncode == 0, inside.stderr
    expected, got, code, gone, stderr = (inside.stdout.split(" ", 4) + [""])[:5]
    assert code == "0", stderr
    assert got == expected and expected.startswith("GPU-")
    assert gone == "999"   # NVML_ERROR_UNKNOWN: the daemon stopped answering after nvmlInit
    outside = subprocess.run(["unshare", "--net", sys.executable, "-c", QUERY], env=env, capture_output=True,
                             text=True, timeout=60)
    assert outside.returncode != 0 and "Driver Not Loaded" in outside.stderr
