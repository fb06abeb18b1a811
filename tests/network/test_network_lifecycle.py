"""Build, double build, crash and clean-up, bandwidth shaping, the CLI."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from emulator.cli.net import app
from emulator.network import Network, NetworkError, build_network, clean_network
from emulator.network.kernel import netns_list
from emulator.topology import load_topology
from tests.network.conftest import reachable, unique_prefix

REPO = Path(__file__).resolve().parents[2]


def ours(prefix: str) -> list[str]:
    return [n for n in netns_list() if n.startswith(prefix + "-")]


def test_double_build_is_refused_and_changes_nothing(rack_net: Network, tmp_path: Path) -> None:
    before = sorted(netns_list())
    with pytest.raises(NetworkError, match="already exists"):
        build_network(load_topology("mini"), prefix=rack_net.prefix, state_dir=tmp_path)
    assert sorted(netns_list()) == before
    assert not (tmp_path / "network.json").exists()
    with pytest.raises(NetworkError, match="prefix"):
        build_network(load_topology("mini"), prefix="Bad-Prefix", state_dir=tmp_path)


def test_clean_after_a_crash_removes_only_its_own(tmp_path: Path) -> None:
    prefix = unique_prefix("tc")
    bystanders = [f"zkeep{os.getpid() % 100000}", f"{prefix}0-keep"]  # the second only starts alike
    for name in bystanders:
        subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        # A supervisor builds the network, starts a daemon inside it, and dies without stopping.
        script = (
            "import os, subprocess\n"
            "from emulator.network import build_network\n"
            f"net = build_network('mini', prefix={prefix!r}, state_dir={str(tmp_path)!r})\n"
            "p = subprocess.Popen(['ip', 'netns', 'exec', net.netns('gpu001'), 'sleep', '600'],\n"
            "                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)\n"
            # the daemon is inside the namespace before the supervisor dies (`ip` enters it, then execs)
            "import time\n"
            "deadline = time.monotonic() + 10\n"
            "while subprocess.run(['ip', 'netns', 'identify', str(p.pid)], capture_output=True, text=True)"
            ".stdout.strip() != net.netns('gpu001'):\n"
            "    assert time.monotonic() < deadline, 'the daemon never entered its namespace'\n"
            "    time.sleep(0.01)\n"
            "print(p.pid, flush=True)\n"
            "os._exit(0)\n")
        out = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        daemon = int(out.stdout.split()[0])
        state = json.loads((tmp_path / "network.json").read_text())
        assert state["prefix"] == prefix and ours(prefix)

        done = clean_network(tmp_path)
        assert done["namespaces"] == len(state["namespaces"]) and done["processes"] >= 1
        assert ours(prefix) == []
        deadline = time.monotonic() + 5
        while Path(f"/proc/{daemon}").exists() and time.monotonic() < deadline:
            try:
                os.waitpid(daemon, os.WNOHANG)
            except ChildProcessError:
                pass
            time.sleep(0.02)
        assert not Path(f"/proc/{daemon}").exists() or "Z" in Path(f"/proc/{daemon}/stat").read_text().split()[2]
        assert prefix not in subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
        if shutil.which("nft"):
            assert prefix not in subprocess.run(["nft", "list", "tables"], capture_output=True, text=True).stdout
        for name in bystanders:
            assert name in netns_list(), f"clean-up removed an unrelated namespace {name}"
        assert clean_network(tmp_path) == {"namespaces": 0, "processes": 0, "seconds": 0.0}  # idempotent
        assert clean_network(prefix)["namespaces"] == 0
    finally:
        for name in bystanders:
            subprocess.run(["ip", "netns", "del", name], capture_output=True)


def test_stop_is_idempotent_and_complete(tmp_path: Path) -> None:
    net = build_network("mini", prefix=unique_prefix("ts"), state_dir=tmp_path)
    assert len(ours(net.prefix)) == len(net.namespaces)
    net.stop()
    net.stop()
    assert ours(net.prefix) == []


@pytest.mark.skipif(shutil.which("iperf3") is None, reason="needs iperf3 (apt-get install iperf3)")
def test_bandwidth_is_scaled(tmp_path: Path) -> None:
    net = build_network("mini", prefix=unique_prefix("tb"), state_dir=tmp_path, bandwidth_scale=1 / 1000)
    server = None
    try:
        assert net.show()["planes"]["compute"]["emulated_rate"] == "400 Mbit/s"
        dst = net.address("gpu002", "compute")
        server = subprocess.Popen(["ip", "netns", "exec", net.netns("gpu002"), "iperf3", "-s", "-B", dst],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline, result = time.monotonic() + 10, None
        while time.monotonic() < deadline:
            run = net.exec("gpu001", ["iperf3", "-c", dst, "-t", "1", "-J"], timeout=20)
            doc = json.loads(run.stdout) if run.returncode == 0 and run.stdout.strip() else {}
            if "sum_received" in doc.get("end", {}):
                result = doc
                break
            time.sleep(0.1)  # poll until the server listens (and answers a whole test)
        assert result is not None, "iperf3 server never answered"
        mbps = result["end"]["sum_received"]["bits_per_second"] / 1e6
        assert 200 < mbps < 440, f"{mbps:.0f} Mbit/s through a 400G link scaled by 1/1000"
    finally:
        if server:
            server.kill()
            server.wait()
        net.stop()


def test_cli_show_exec_clean(tmp_path: Path) -> None:
    net = build_network("mini", prefix=unique_prefix("tl"), state_dir=tmp_path / "network")
    runner = CliRunner()
    try:
        res = runner.invoke(app, ["show", "--run-dir", str(tmp_path), "--json"])
        assert res.exit_code == 0, res.output
        assert "namespace per VRF" in res.output
        res = runner.invoke(app, ["show", "--run-dir", str(tmp_path)])
        assert res.exit_code == 0 and "compute" in res.output
        attached = Network.attach(tmp_path / "network")
        fault = attached.link_down("ib-leaf01", "ib-spine01")
        assert "ib-spine01" not in net.exec("ib-leaf01", ["ip", "route"]).stdout
        res = runner.invoke(app, ["show", "--run-dir", str(tmp_path)])
        assert fault.id in res.output
        attached.clear(fault.id)
        assert "ib-spine01" in net.exec("ib-leaf01", ["ip", "route"]).stdout
        assert all(reachable(net, "gpu001", [("rail0", net.rail_addresses("gpu002")[0])], tries=2).values())
        res = runner.invoke(app, ["exec", "--run-dir", str(tmp_path), "nope", "true"])
        assert res.exit_code == 2 and "no host or switch namespace 'nope'" in res.output
        res = runner.invoke(app, ["clean", "--run-dir", str(tmp_path)])
        assert res.exit_code == 0 and f"removed {len(net.namespaces)} namespaces" in res.output
        assert ours(net.prefix) == []
    finally:
        clean_network(net.prefix)
