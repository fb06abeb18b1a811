"""`twin fabric ...` and `twin ib exec ...` as an operator runs them, against `twin up mini --fabric`
(the real OpenSM over ibsim; infiniband-diags run against it)."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from emulator.client import Twin
from tests.fabric.conftest import REASON

pytestmark = pytest.mark.skipif(bool(REASON), reason=REASON or "n/a")


@pytest.fixture(scope="module")
def fabric_twin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Twin]:
    with Twin.up("mini", run_dir=tmp_path_factory.mktemp("fabric-cli") / "run", fabric=True, timeout=60) as twin:
        yield twin


def twin_cli(twin_exe: str, run: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([twin_exe, *args, *(["--run-dir", str(run)] if args[0] != "ib" else [])],
                          capture_output=True, text=True, timeout=60,
                          env={"TWIN_RUN_DIR": str(run), "PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "COLUMNS": "200"})


def test_ib_exec_runs_the_real_diags(fabric_twin: Twin, twin_exe: str) -> None:
    run = fabric_twin.run.path
    links = twin_cli(twin_exe, run, "ib", "exec", "iblinkinfo")
    assert links.returncode == 0, links.stderr
    assert links.stdout.count("Active/  LinkUp") >= 16 and '"ib-leaf01"' in links.stdout
    ports = json.loads(twin_cli(twin_exe, run, "fabric", "ports", "gpu002 mlx5_3", "--json").stdout)
    (port,) = ports
    perf = twin_cli(twin_exe, run, "ib", "exec", "perfquery", str(port["lid"]), "1")
    assert perf.returncode == 0 and f"Lid {port['lid']} port 1" in perf.stdout and "SymbolErrorCounter" in perf.stdout
    route = twin_cli(twin_exe, run, "ib", "exec", "ibroute", "-n", str(port["peer_lid"]))
    assert route.returncode == 0 and re.search(rf"^0x{port['lid']:04x} 0*{port['peer_port']}\b", route.stdout, re.M)
    ca = twin_cli(twin_exe, run, "ib", "exec", "--node", "gpu002-mlx5_3", "ibstat")
    assert ca.returncode == 0 and "State: Active" in ca.stdout and f"Base lid: {port['lid']}" in ca.stdout
    bad = twin_cli(twin_exe, run, "ib", "exec", "--node", "gpu009-mlx5_0", "ibstat")
    assert bad.returncode == 2 and "no node 'gpu009-mlx5_0'" in bad.stderr


def test_fabric_commands(fabric_twin: Twin, twin_exe: str) -> None:
    run = fabric_twin.run.path
    route = twin_cli(twin_exe, run, "fabric", "route", "gpu001 mlx5_0", "gpu002:4")
    assert route.returncode == 0 and "3 switch hops" in route.stdout and "ib-spine" in route.stdout
    victim = json.loads(twin_cli(twin_exe, run, "fabric", "ports", "gpu001 mlx5_6", "--json").stdout)[0]["name"]
    down = twin_cli(twin_exe, run, "fabric", "disable", victim)
    try:
        assert down.returncode == 0 and "gpu001 mlx5_6 port 1 is Down" in down.stdout, down.stdout + down.stderr
        analyze = twin_cli(twin_exe, run, "fabric", "analyze")
        assert "gpu001: 7/8 rails up (down: gpu001 mlx5_6)" in analyze.stdout
        alarms = twin_cli(twin_exe, run, "fabric", "alarms")
        assert "Link is down" in alarms.stdout and "Computer: gpu001 / mlx5_6" in alarms.stdout
    finally:
        up = twin_cli(twin_exe, run, "fabric", "enable", victim)
    assert up.returncode == 0 and "is Active" in up.stdout
    nccl = twin_cli(twin_exe, run, "fabric", "nccl-tests", "--op", "all_reduce", "--gpus", "16", "-b", "8", "-e",
                    "8G", "-f", "2")
    assert nccl.returncode == 0, nccl.stderr
    rows = [line.split() for line in nccl.stdout.splitlines() if not line.startswith("#")]
    assert [int(r[0]) for r in rows] == [8 << i for i in range(31)]
    assert "MODELLED" in nccl.stdout.splitlines()[0] and "Avg bus bandwidth" in nccl.stdout
    busbw = [float(r[7]) for r in rows]
    assert busbw == sorted(busbw) and 300 < busbw[-1] < 400   # two servers: bounded by 8 NICs and NVLink


def test_fabric_cli_errors(fabric_twin: Twin, twin_exe: str, tmp_path: Path) -> None:
    run = fabric_twin.run.path
    for args, text in [(("fabric", "disable", "ib-leaf01", "9"), "port 9 has no cable"),
                       (("fabric", "route", "gpu001:x", "gpu002:0"), "a rail is a number"),
                       (("fabric", "nccl-tests", "--op", "gossip"), "unknown op"),
                       (("fabric", "nccl-tests", "-b", "1G", "-e", "1M"), "minbytes <= maxbytes"),
                       (("fabric", "estimate", "-b", "lots"), "is not a size"),
                       (("fabric", "sharp", "release", "nope"), "no SHARP job")]:
        r = twin_cli(twin_exe, run, *args)
        assert r.returncode == 2 and text in r.stderr, (args, r.stdout, r.stderr)
    with Twin.up("mini", run_dir=tmp_path / "plain", timeout=60) as plain:
        r = twin_cli(twin_exe, plain.run.path, "fabric", "health")
        assert r.returncode == 2 and "runs no fabric manager" in r.stderr
        r = twin_cli(twin_exe, plain.run.path, "ib", "exec", "iblinkinfo")
        assert r.returncode == 2 and "runs no fabric manager" in r.stderr


def test_the_fabric_cli_and_sdk_live_in_the_service(fabric_twin: Twin) -> None:
    """`twin fabric`, `twin ib` and `Twin.fabric()` come from services/fabric (its registration), not
    from the emulator core."""
    import importlib.util

    from emulator.service import load, services
    from services.fabric.sdk import FabricClient

    fabric = services()["fabric"]
    assert {name: load(ref).info.help.split(":")[0] for name, ref in fabric.cli.items()} == {
        "fabric": "`twin fabric ...`", "ib": "`twin ib exec TOOL [ARGS]`"}
    assert all(ref.startswith("services.fabric.") for ref in fabric.cli.values())
    for old in ("emulator.cli.fabric", "emulator.cli.ib", "emulator.fabric_client"):
        assert importlib.util.find_spec(old) is None, old
    with fabric_twin.fabric() as client:
        assert isinstance(client, FabricClient)
        assert client.call("GetHealth").sm_state == "MASTER"
