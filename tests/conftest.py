"""Shared fixtures: real twins started as real processes in temporary run directories."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from emulator.client import Twin
from emulator.procutil import pid_alive
from emulator.rundir import RunDir


def skip_reason(what: str, missing: list[str], packages: list[str]) -> str:
    """Why tests that need root and some tools cannot run here, or "" when they can."""
    if os.geteuid() != 0:
        return f"{what} need root (CI runs them as root)"
    if missing:
        return f"{what} need {', '.join(missing)} (apt-get install {' '.join(packages)}; `make install` does)"
    return ""


def netns_skip_reason(what: str) -> str:
    """Why a `--network netns` twin cannot start here (root, iproute2 and nftables; only one such
    twin per machine, since they share the OOB prefix on the operator port), or "" when it can."""
    import subprocess

    from emulator.network.kernel import missing_tools

    reason = skip_reason(what, missing_tools(), ["iproute2", "nftables"])
    if reason:
        return reason
    routed = subprocess.run(["ip", "-4", "route", "show", "10.103.0.0/16"], capture_output=True, text=True).stdout
    return "another --network netns twin runs on this machine (one at a time)" if routed.strip() else ""


def twin_pids(run: RunDir) -> list[int]:
    """Every pid the twin in `run` has started (supervisor, broker, daemons), alive or not."""
    import json
    pids = []
    try:
        status = json.loads(run.daemons.read_text())
    except (OSError, ValueError):
        return pids
    pids.append(status.get("supervisor") or 0)
    pids.append(status.get("broker_pid") or 0)
    pids += [d["pid"] for d in status["daemons"].values()]
    return [p for p in pids if p]


def assert_nothing_left(run: RunDir, pids: list[int]) -> None:
    alive = [p for p in pids if pid_alive(p)]
    assert not alive, f"processes left behind after twin down: {alive}"
    assert not run.supervisor_pid.exists()


@pytest.fixture(scope="module")
def mini_twin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Twin]:
    run_dir = tmp_path_factory.mktemp("mini")
    twin = Twin.up("mini", run_dir=run_dir, telemetry_interval=0.2, timeout=60)
    pids = twin_pids(twin.run)
    try:
        yield twin
    finally:
        pids = sorted(set(pids + twin_pids(twin.run)))
        twin.down()
        assert_nothing_left(twin.run, pids)


@pytest.fixture
def twin_exe() -> str:
    """The `twin` command of the environment running the tests."""
    return str(Path(sys.executable).parent / "twin")
