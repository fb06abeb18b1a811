"""The mini twin as real processes: gRPC, MQTT, Prometheus text, crash-restart, clean stop."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.request

import grpc
import pytest
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from prometheus_client.parser import text_string_to_metric_families

from clustertwin.v1 import gpu_node_pb2 as pb
from emulator.client import Twin, TwinRpcError
from emulator.procutil import pid_alive
from services.gpu_node import topo_matrix


def wait_until(predicate, timeout: float = 15.0, interval: float = 0.05, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def test_manifest_lists_every_server_on_its_own_address(mini_twin: Twin) -> None:
    daemons = mini_twin.daemons("gpu_node")
    assert [d.name for d in daemons] == ["gpu001", "gpu002"]
    oob = [d.addresses["oob"] for d in daemons]
    assert len(set(oob)) == len(oob) and all(a.startswith("127.") for a in oob)
    assert all(d.grpc == f"{d.addresses['oob']}:50051" for d in daemons)
    assert mini_twin.manifest.broker.url.startswith("mqtt://127.")


def test_gpu_queries_show_an_hgx_h100(mini_twin: Twin) -> None:
    node = mini_twin.gpu_node("gpu001")
    info = node.node()
    assert info.hostname == "gpu001" and info.gpu_count == 8
    gpus = node.gpus()
    assert [g.index for g in gpus] == list(range(8))
    g0 = gpus[0]
    assert g0.name == "NVIDIA H100 80GB HBM3"
    assert g0.memory_total_mib == 81559
    assert g0.power_limit_w == 700
    assert g0.compute_capability == "9.0"
    assert [g.numa_node for g in gpus] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert len(g0.nvlinks) == 18 and all(link.up for link in g0.nvlinks)
    assert len({g.uuid for g in gpus}) == 8 and all(g.uuid.startswith("GPU-") for g in gpus)
    assert "NV18" in node.topology().rows[0].cells


def test_cli_renders_topo_from_the_structured_matrix(mini_twin: Twin, twin_exe: str) -> None:
    """GetTopology carries cells only; `twin gpu topo` prints them as `nvidia-smi topo -m` does."""
    out = subprocess.run([twin_exe, "gpu", "topo", "gpu001", "--run-dir", str(mini_twin.run.path)],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    assert out == topo_matrix.topology().text + "\n"
    assert out.splitlines()[1].startswith("GPU0\t X \tNV18\t") and "NIC Legend:" in out


def test_health_and_reflection_answer(mini_twin: Twin) -> None:
    address = mini_twin.daemon("gpu002").grpc
    with grpc.insecure_channel(address) as channel:
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        replies = stub.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")]),
                                            timeout=5)
        names = {s.name for r in replies for s in r.list_services_response.service}
    assert {"clustertwin.v1.GpuNode", "grpc.health.v1.Health"} <= names
    assert mini_twin.status()["daemons"][1]["health"] == "SERVING"


def test_xid79_ends_the_lease_and_reaches_the_bus(mini_twin: Twin) -> None:
    node = mini_twin.gpu_node("gpu001")
    lease = node.lease("job-xid79", count=8, utilization=90)
    assert lease.env["CUDA_VISIBLE_DEVICES"] == "0,1,2,3,4,5,6,7"
    assert lease.env["NVIDIA_VISIBLE_DEVICES"] == ",".join(g.uuid for g in node.gpus())
    with mini_twin.events("events/gpu001/#") as events:
        fault = node.inject_xid(gpu=3, xid=79)
        xid = events.wait_for(lambda e: e["kind"] == "xid" and e["xid"] == 79)
        ended = events.wait_for(lambda e: e["kind"] == "lease_end" and e["lease_id"] == lease.id)
    assert xid["gpu"] == 3 and ended["node"] == "gpu001"
    assert not node.lease_info(lease.id).active
    with pytest.raises(TwinRpcError) as lost:
        node.gpu(3)
    assert "lost" in lost.value.details.lower()
    assert node.node().gpu_count == 7
    assert any(": 79, " in line and "fallen off the bus" in line for line in node.kernel_log())
    # A fault on a lost GPU is refused and changes nothing.
    before = len(node.faults())
    with pytest.raises(TwinRpcError) as refused:
        node.inject_xid(gpu=3, xid=48)
    assert refused.value.code == grpc.StatusCode.FAILED_PRECONDITION
    assert len(node.faults()) == before
    assert fault.id in {f.id for f in node.faults()}
    # Only a reboot brings it back.
    info = node.reboot()
    assert info.gpu_count == 8 and node.gpu(3).health == pb.GPU_HEALTH_PASS


def test_bad_requests_get_clear_errors_and_change_nothing(mini_twin: Twin) -> None:
    node = mini_twin.gpu_node("gpu001")
    with pytest.raises(TwinRpcError) as e:
        node.gpu(8)
    assert e.value.code == grpc.StatusCode.NOT_FOUND and "8" in e.value.details
    first = node.lease("job-a", gpus=[0, 1])
    leases_before = [ls.id for ls in node.leases()]
    with pytest.raises(TwinRpcError) as e:
        node.lease("job-b", gpus=[1, 2])
    assert first.id in e.value.details
    assert [ls.id for ls in node.leases()] == leases_before
    assert not node.gpu(2).lease_ids
    with pytest.raises(TwinRpcError) as e:
        node.create_gpu_instance(4, "5g.40gb")
    assert e.value.code in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.FAILED_PRECONDITION)
    with pytest.raises(KeyError, match="gpu999"):
        mini_twin.gpu_node("gpu999")
    node.release(first.id)


def test_busy_gpu_draws_power_in_telemetry_and_metrics(mini_twin: Twin) -> None:
    node = mini_twin.gpu_node("gpu001")
    idle = node.gpu(6)
    lease = node.lease("job-hot", gpus=[5], utilization=100)
    try:
        with mini_twin.events("telemetry/gpu001/gpu/5") as tel:
            sample = tel.wait_for(lambda m: m["power_w"] > 300 and m["gpu_util"] >= 90
                                  and m["temperature_c"] > idle.temperature_c + 2, timeout=30)
        assert sample["sm_clock_mhz"] > idle.sm_clock_mhz
        url = mini_twin.daemon("gpu001").metrics
        text = urllib.request.urlopen(url, timeout=5).read().decode()
        families = {f.name: f for f in text_string_to_metric_families(text)}
        assert {"DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_XID_ERRORS",
                "DCGM_FI_DEV_FB_USED"} <= set(families)
        power = {s.labels["gpu"]: s.value for s in families["DCGM_FI_DEV_POWER_USAGE"].samples}
        assert power["5"] > power["6"]
        labels = families["DCGM_FI_DEV_GPU_TEMP"].samples[0].labels
        assert {"gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname"} <= set(labels)
    finally:
        node.release(lease.id)


def test_killed_daemon_restarts_with_its_state(mini_twin: Twin) -> None:
    node = mini_twin.gpu_node("gpu002")          # the MIG server of mini: its layout must survive too
    layout = [[(gi.id, gi.profile) for gi in node.gpu_instances(g)] for g in range(8)]
    assert layout[0], "gpu002 should come up with its MIG layout"
    lease = node.lease("job-survivor", count=1, mig_profile="1g.10gb")
    fault = node.inject_fault("thermal", gpu=7)
    status = json.loads(mini_twin.run.daemons.read_text())["daemons"]["gpu002"]
    os.kill(status["pid"], signal.SIGKILL)
    wait_until(lambda: json.loads(mini_twin.run.daemons.read_text())["daemons"]["gpu002"]["restarts"] >= 1,
               what="the supervisor to restart gpu002")
    wait_until(lambda: any(d["name"] == "gpu002" and d["health"] == "SERVING"
                           for d in mini_twin.status()["daemons"]), what="gpu002 healthy again")
    new_pid = json.loads(mini_twin.run.daemons.read_text())["daemons"]["gpu002"]["pid"]
    assert new_pid != status["pid"] and pid_alive(new_pid)
    assert lease.id in [ls.id for ls in node.leases()]
    assert fault.id in [f.id for f in node.faults()]
    assert [[(gi.id, gi.profile) for gi in node.gpu_instances(g)] for g in range(8)] == layout
    assert lease.id in node.gpu(lease.devices[0].gpu).lease_ids
    node.release(lease.id)
    node.clear_fault(fault.id)


def test_event_stream_and_cli_tail_see_a_fault(mini_twin: Twin, twin_exe: str) -> None:
    node = mini_twin.gpu_node("gpu001")
    stream = node.watch_events(after_seq=0, replay=True)
    tail = subprocess.Popen([twin_exe, "events", "--run-dir", str(mini_twin.run.path), "--node", "gpu001",
                             "--kind", "xid", "--count", "1", "--timeout", "30", "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # The tail subscribes asynchronously: inject until it has seen one (bounded), as a user would retry.
        deadline = time.monotonic() + 20
        while tail.poll() is None and time.monotonic() < deadline:
            node.inject_xid(gpu=1, xid=13)
            try:
                tail.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                pass
        out, err = tail.communicate(timeout=10)
        assert tail.returncode == 0, err
        doc = json.loads(out.splitlines()[0])
        assert doc["topic"].endswith("/events/gpu001/xid") and doc["xid"] == 13
        seen = []
        for event in stream:
            seen.append(event)
            if event.kind == "xid" and event.xid == 13:
                break
        assert [e.seq for e in seen] == sorted(e.seq for e in seen), "events arrive in order"
        assert seen[-1].gpu == 1
    finally:
        stream.cancel()
        if tail.poll() is None:
            tail.kill()
