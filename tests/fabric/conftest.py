"""Fabric tests run the real ibsim, OpenSM and infiniband-diags: they need those tools, and root
(umad2sim and OpenSM are exercised as CI runs them). The pure netfile/model tests need neither."""

from __future__ import annotations

import base64
import json
import queue
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from clustertwin.v1 import fabric_pb2_grpc as pb_grpc
from emulator import bus
from emulator.daemon_config import DaemonConfig
from emulator.procutil import pid_alive, wait_for_port
from emulator.topology import load_topology
from services.fabric.daemon_spec import FabricSpec
from services.fabric.netfile import FabricPlan, make_fabric_plan
from services.fabric.subnet import APT_PACKAGES, Subnet, missing_tools
from tests.conftest import skip_reason, stopped_cleanly

REASON = skip_reason("fabric tests (OpenSM over ibsim)", missing_tools(), list(APT_PACKAGES))

needs_subnet = pytest.mark.skipif(bool(REASON), reason=REASON or "n/a")


@pytest.fixture(scope="module")
def rack_plan() -> FabricPlan:
    return make_fabric_plan(load_topology("rack"))


@pytest.fixture(scope="module")
def rack_subnet(rack_plan: FabricPlan, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Subnet]:
    if REASON:
        pytest.skip(REASON)
    subnet = Subnet(rack_plan, Path(tmp_path_factory.mktemp("fabric-rack")))
    subnet.start(timeout=30)
    with stopped_cleanly("ibsim/OpenSM", subnet.pids, subnet.stop):
        yield subnet


ROOT = Path(__file__).resolve().parents[2]
TWIN = "fabrictest"
AUTH = "Basic " + base64.b64encode(b"admin:123456").decode()
START_TIMEOUT_S = 30.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _children(pid: int) -> list[int]:
    out = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            out += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            pass
    return out


class FabricUnderTest:
    """The fabric-manager daemon on the rack fabric, its gRPC stub, its REST API and its bus events."""

    def __init__(self, proc: subprocess.Popen[bytes], grpc_addr: str, ufm: str, mqtt: queue.Queue[Any],
                 log: Path) -> None:
        self.proc, self.grpc_addr, self.ufm, self.mqtt, self.log = proc, grpc_addr, ufm, mqtt, log
        self.subnet_pids: list[int] = []
        self.channel = grpc.insecure_channel(grpc_addr)
        self.stub = pb_grpc.FabricStub(self.channel)

    def rest(self, path: str, body: Any = None, auth: str | None = AUTH, method: str = "") -> tuple[int, Any]:
        data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        req = urllib.request.Request(f"http://{self.ufm}/ufmRest{path}", data=data,
                                     method=method or ("GET" if data is None else "POST"))
        if auth:
            req.add_header("Authorization", auth)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=20) as resp:
                return resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())


def _subscribe(port: int, topic: str) -> bus.Subscription:
    if not wait_for_port("127.0.0.1", port, 10):
        raise TimeoutError(f"mosquitto did not listen on 127.0.0.1:{port}")
    return bus.Subscription("127.0.0.1", port, [topic])


def fabric_config(run: Path, **extra: Any) -> DaemonConfig:
    """A fabric manager on the rack fabric with its files under `run`. The log is not under
    `<run>/logs`: the daemon takes its run directory from `run_dir`, not from the log's path."""
    (run / "state").mkdir(parents=True, exist_ok=True)
    broker_port = extra.pop("broker_port", _free_port())
    spec = FabricSpec(topology_file="rack", ufm=f"127.0.0.1:{_free_port()}", ufm_user="admin", ufm_password="123456",
                      **extra)
    return DaemonConfig(name="fabric", kind="fabric", twin=TWIN, spec=spec,
                        grpc=f"127.0.0.1:{_free_port()}", metrics=None, store_url=f"sqlite:///{run}/state/fabric.db",
                        broker_host="127.0.0.1", broker_port=broker_port,
                        log_file=str(run / "fabric-daemon.log"), run_dir=str(run))


def start_fabric(cfg: DaemonConfig, mqtt: queue.Queue[Any] | None = None) -> FabricUnderTest:
    """Start the daemon with `cfg` (written next to its log) and wait until it serves."""
    run = Path(cfg.run_dir or ".")
    (run / "fabric.json").write_text(json.dumps(cfg.to_dict()))
    log = Path(cfg.log_file or run / "fabric-daemon.log")
    with open(log, "ab") as out:
        proc = subprocess.Popen([sys.executable, "-m", "services.fabric.daemon", str(run / "fabric.json")],
                                cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
    t = FabricUnderTest(proc, cfg.grpc, str(FabricSpec.of(cfg).ufm), mqtt or queue.Queue(), log)
    health = health_pb2_grpc.HealthStub(t.channel)
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        if proc.poll() is not None:
            t.channel.close()
            raise AssertionError(f"daemon exited: {log.read_text()[-2000:]}")
        try:
            if health.Check(health_pb2.HealthCheckRequest(service="clustertwin.v1.Fabric"),
                            timeout=1).status == health_pb2.HealthCheckResponse.SERVING:
                break
        except grpc.RpcError:
            pass
        if time.monotonic() > deadline:
            stop_fabric(t)
            raise AssertionError(f"not serving within {START_TIMEOUT_S} s: {log.read_text()[-2000:]}")
        time.sleep(0.1)
    t.subnet_pids = _children(proc.pid)
    return t


def stop_fabric(t: FabricUnderTest) -> int:
    """SIGTERM the daemon (SIGKILL after 15 s); its exit code. Asserts its ibsim and OpenSM are gone."""
    kids = _children(t.proc.pid)
    t.channel.close()
    t.proc.send_signal(signal.SIGTERM)
    try:
        rc = t.proc.wait(15)
    except subprocess.TimeoutExpired:
        t.proc.kill()
        rc = t.proc.wait()
    left = [p for p in kids if pid_alive(p)]
    assert not left, f"left running after SIGTERM: {left}"
    return rc


@pytest.fixture(scope="module")
def twin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FabricUnderTest]:
    if shutil.which("mosquitto") is None:
        pytest.skip("needs mosquitto")
    run = tmp_path_factory.mktemp("fabric-svc")
    mqtt_port = _free_port()
    broker = subprocess.Popen(["mosquitto", "-p", str(mqtt_port)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    sub = _subscribe(mqtt_port, f"clustertwin/{TWIN}/events/fabric/#")
    t = None
    try:
        t = start_fabric(fabric_config(run, broker_port=mqtt_port), sub.messages)
        assert (run / "fabric" / "fabric" / "opensm.log").exists()   # <run>/fabric/<name>
        yield t
    finally:
        rc = stop_fabric(t) if t is not None else 0
        sub.close()
        broker.terminate()
        broker.wait(5)
        assert rc == 0, t and t.log.read_text()[-2000:]
        assert not list((run / "fabric" / "fabric" / "work").glob("sys-*"))
