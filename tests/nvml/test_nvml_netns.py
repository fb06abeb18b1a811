"""Inside an emulated host (`twin net exec gpu00N -- ...`, a Slurm job on it) the library needs no
settings: it reaches its own host's daemon on the abstract socket of the host's network namespace."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from emulator.client import Twin
from tests.conftest import assert_nothing_left, netns_lock, netns_skip_reason, twin_pids
from tests.nvml.conftest import nvml_env
from tests.slurm.conftest import REASON as SLURM_REASON
from tests.slurm.test_slurm_twin import slurm_processes

QUERY = "import pynvml as n; n.nvmlInit(); print(n.nvmlDeviceGetUUID(n.nvmlDeviceGetHandleByIndex(0)))"


@pytest.fixture(scope="module")
def netns_twin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Twin]:
    with netns_lock():   # one namespace twin per machine
        reason = netns_skip_reason("the NVML netns test")
        if reason:
            pytest.skip(reason)
        twin = Twin.up("mini", run_dir=tmp_path_factory.mktemp("nvml-netns"), network="netns", timeout=90)
        pids = twin_pids(twin.run)
        try:
            yield twin
        finally:
            twin.down()
            assert_nothing_left(twin.run, pids)
            assert not slurm_processes(twin.run.path), "twin down left Slurm processes behind"


def test_each_host_reads_its_own_gpus(netns_twin: Twin, nvml_lib: str, twin_exe: str) -> None:
    env = nvml_env(nvml_lib, None, TWIN_RUN_DIR=str(netns_twin.run.path))
    for node in ("gpu001", "gpu002"):
        p = subprocess.run([twin_exe, "net", "exec", node, "--", sys.executable, "-c", QUERY], env=env,
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        assert p.stdout.strip() == netns_twin.gpu_node(node).gpu(0).uuid
    # Outside every host's namespace nothing answers on the abstract socket: no driver
    p = subprocess.run([sys.executable, "-c", QUERY], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode != 0 and "Driver Not Loaded" in p.stderr


def test_a_slurm_job_reads_its_hosts_gpus(netns_twin: Twin, nvml_lib: str, twin_exe: str) -> None:
    """slurmd runs in its server's namespace, and so do its jobs' tasks."""
    if SLURM_REASON:
        pytest.skip(SLURM_REASON)
    run_dir = netns_twin.run.path
    up = subprocess.run([twin_exe, "slurm", "up", "--run-dir", str(run_dir)], capture_output=True, text=True,
                        timeout=120)
    assert up.returncode == 0, up.stderr
    env = nvml_env(nvml_lib, None, SLURM_CONF=str(run_dir / "slurm" / "slurm.conf"))
    for node in ("gpu001", "gpu002"):
        p = subprocess.run(["srun", "-N1", "-w", node, sys.executable, "-c", QUERY], env=env, cwd=run_dir,
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        assert p.stdout.strip() == netns_twin.gpu_node(node).gpu(0).uuid
