"""The fabric manager's state lives in its store (no side files) and outlives a kill -9: disabled
cables, ports marked unhealthy, partitions and the event log come back with the restarted daemon."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import grpc
import pytest

from clustertwin.v1 import fabric_pb2 as pb
from emulator.daemon_config import DaemonConfig
from emulator.procutil import pid_alive
from services.fabric.daemon import control_socket, fabric_dir
from services.fabric.partitions import Partition
from services.fabric.store import FabricStore
from tests.fabric.conftest import REASON, fabric_config, start_fabric, stop_fabric


def test_store_round_trip_and_event_bound(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'fabric.db'}"
    store = FabricStore(url, "fabric")
    parts = [Partition("b", 0x20, ((0x10, "full"),), True), Partition("a", 0x10, ((0x11, "limited"),))]
    store.save([("ib-leaf01", 3)], {"x_1": {"name": "x_1", "action": "isolate"}}, parts)
    for seq in range(1, 8):
        store.add_event({"seq": seq, "time": float(seq), "kind": "port_down"}, keep=5)
    store.close()
    other = FabricStore(url, "other-twin")   # one database, two fabrics: each sees its own
    assert other.load().disabled == []
    other.close()
    saved = FabricStore(url, "fabric").load(events=4)
    assert saved.disabled == [("ib-leaf01", 3)]
    assert saved.unhealthy == {"x_1": {"name": "x_1", "action": "isolate"}}
    assert saved.partitions == parts   # in the order partitions.conf had them
    assert [e["seq"] for e in saved.events] == [4, 5, 6, 7]


def _cfg(run_dir: str | None = None) -> DaemonConfig:
    return DaemonConfig(name="fabric", kind="fabric", twin="t", spec={"topology_file": "rack"}, grpc="127.0.0.1:1",
                        metrics=None,
                        store_url="sqlite://", broker_host="127.0.0.1", broker_port=1,
                        log_file="/var/log/elsewhere/fabric.log", run_dir=run_dir)


def test_run_directory_comes_from_the_config_not_the_log_path(tmp_path: Path) -> None:
    cfg = _cfg(str(tmp_path))
    assert fabric_dir(cfg) == tmp_path / "fabric" / "fabric"
    assert control_socket(cfg) is not None and control_socket(cfg).parent in (tmp_path, Path("/tmp"))
    with pytest.raises(ValueError, match="run_dir"):
        fabric_dir(_cfg())
    assert control_socket(_cfg()) is None


@pytest.mark.skipif(bool(REASON), reason=REASON or "n/a")
def test_state_survives_kill_9_and_restart(tmp_path: Path) -> None:
    cfg = fabric_config(tmp_path)
    t = start_fabric(cfg)
    try:
        down = t.stub.SetPortState(pb.FabricSetPortStateRequest(system="gpu002 mlx5_3", port=1, enabled=False),
                                   timeout=30)
        sick = t.stub.ListPorts(pb.FabricListPortsRequest(system="gpu003")).ports[0].name
        t.stub.SetPortHealth(pb.FabricSetPortHealthRequest(ports=[sick], healthy=False), timeout=30)
        guid = t.stub.ListPorts(pb.FabricListPortsRequest(system="gpu001 mlx5_0")).ports[0].guid
        t.stub.SetPartition(pb.FabricSetPartitionRequest(partition=pb.FabricPartition(
            pkey=0x12, name="tenant_a", members=[pb.FabricPartitionMember(guid=guid, membership="full")])), timeout=30)
        seqs = [e.seq for e in _events(t)]
        os.kill(t.proc.pid, signal.SIGKILL)
        t.proc.wait(10)
        t.channel.close()
        deadline = time.monotonic() + 10   # ibsim and OpenSM die with their parent (PR_SET_PDEATHSIG)
        while any(pid_alive(p) for p in t.subnet_pids) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(pid_alive(p) for p in t.subnet_pids)
    except BaseException:
        stop_fabric(t)
        raise
    t = start_fabric(cfg)
    try:
        port = t.stub.ListPorts(pb.FabricListPortsRequest(system="gpu002 mlx5_3")).ports[0]
        assert port.disabled and port.logical_state == "Down" and port.name == down.port.name
        assert [u.name for u in t.stub.ListUnhealthyPorts(pb.FabricListUnhealthyPortsRequest()).ports] == [sick]
        assert t.stub.ListPorts(pb.FabricListPortsRequest(system="gpu003")).ports[0].logical_state == "Down"
        assert {a.object_name for a in t.stub.ListAlarms(pb.FabricListAlarmsRequest()).alarms} == {down.port.name, sick}
        (p,) = [p for p in t.stub.ListPartitions(pb.FabricListPartitionsRequest()).partitions if p.pkey == 0x12]
        assert p.name == "tenant_a" and [m.guid for m in p.members] == [guid]
        keys = t.stub.GetPKeys(pb.FabricGetPKeysRequest(system="gpu001 mlx5_0", port=1)).pkeys
        assert any(k.pkey == 0x12 for k in keys)   # OpenSM was given the partition again
        assert [e.seq for e in _events(t)][:len(seqs)] == seqs   # the event log came back
        files = {f.name for f in (tmp_path / "fabric" / "fabric").iterdir()}
        assert not {f for f in files if f.endswith(".json") and f != "subnet.json"}, files   # no side files
    finally:
        assert stop_fabric(t) == 0


def _events(t: object) -> list[pb.FabricEvent]:
    out = []
    try:
        for ev in t.stub.WatchEvents(pb.FabricWatchEventsRequest(since_seq=0), timeout=1):  # type: ignore[attr-defined]
            out.append(ev.event)
    except grpc.RpcError as e:
        assert e.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    return out
