"""Slurm tests run the real slurmctld, slurmd and munged from Debian's slurm-wlm and munge: they
need those packages, and root (SlurmUser=root; jobs run as root). The config tests need neither."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from emulator.topology import load_topology
from services.slurm.cluster import APT_PACKAGES, SlurmCluster, missing_tools
from tests import waiting
from tests.conftest import skip_reason, stopped_cleanly

REASON = skip_reason("slurm tests (slurmctld, slurmd, munged as root)", missing_tools(), list(APT_PACKAGES))

needs_slurm = pytest.mark.skipif(bool(REASON), reason=REASON or "n/a")


def wait_for(predicate, timeout: float, what: str, interval: float = 0.2):  # noqa: ANN001, ANN201
    """tests.waiting.wait_for with the Slurm tests' argument order."""
    return waiting.wait_for(what, predicate, timeout, interval)


@pytest.fixture(scope="module")
def rack_slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    if REASON:
        pytest.skip(REASON)
    cluster = SlurmCluster(load_topology("rack"), Path(tmp_path_factory.mktemp("slurm-rack")))
    cluster.start(timeout=60)
    cgroup = cluster.cgroup
    with stopped_cleanly("slurm daemons", cluster.pids, cluster.stop):
        yield cluster
    assert cgroup is None or not cgroup.path.exists(), f"slurm job/step processes left behind: {cgroup.pids()}"


@pytest.fixture
def slurm(rack_slurm: SlurmCluster) -> Iterator[SlurmCluster]:
    """The rack cluster, with no jobs and every node idle again after the test."""
    yield rack_slurm
    rack_slurm.run("scancel", "--full", "-u", "root", check=False)
    wait_for(lambda: not rack_slurm.run("squeue", "-h", check=False).stdout.strip(), 30,
             "the queue to empty")
    wait_for(lambda: set(rack_slurm.node_states().values()) == {"idle"}, 30, "every node idle")
