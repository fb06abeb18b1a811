"""Every daemon kind behaves alike: one conformance test run against each kind the service registry
installs (emulator/service.py), on one twin that runs them all (mini --fabric --ceph --lustre,
on the twin clock at twice wall time).

For each kind: it starts and answers gRPC health (overall and for its service) and reflection;
it keeps what it was told across a kill -9 and the supervisor's restart; the restarted process
announces itself with a typed event (emulator/events.py) stamped on the twin clock; and a request
it cannot serve is refused with the gRPC status (or S3 error) the real system gives.

A kind added to the registry without a probe here fails `test_every_kind_has_a_probe`.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import boto3
import grpc
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import ProtoReflectionDescriptorDatabase

from clustertwin.v1 import (
    ceph_pb2,
    ceph_pb2_grpc,
    fabric_pb2,
    fabric_pb2_grpc,
    gpu_node_pb2,
    gpu_node_pb2_grpc,
    lustre_pb2,
    lustre_pb2_grpc,
)
from emulator import events
from emulator.client import Twin
from emulator.manifest import DaemonEntry, Manifest
from emulator.process import same_process
from emulator.service import daemon_kinds
from services.ceph.manifest import RgwEntry
from services.lustre.manifest import LustreSection, OssEntry
from tests.conftest import skip_reason

CLOCK_SCALE = 2.0
RPC_TIMEOUT = 30.0


@pytest.fixture(scope="module")
def twin(tmp_path_factory: pytest.TempPathFactory) -> Twin:
    from services.fabric.subnet import missing_tools

    if reason := skip_reason("the fabric manager's tests", missing_tools(), ["ibsim-utils", "opensm"]):
        pytest.skip(reason)
    run_dir = tmp_path_factory.mktemp("conformance")
    with Twin.up("mini", run_dir=run_dir, fabric=True, ceph=True, lustre=True, clock_scale=CLOCK_SCALE,
                 timeout=240) as t:
        yield t


def first(twin: Twin, kind: str) -> DaemonEntry:
    return twin.manifest.daemons_of(kind)[0]


def channel(address: str) -> grpc.Channel:
    return grpc.insecure_channel(address)


def rpc_code(call: Callable[[], Any]) -> grpc.StatusCode:
    with pytest.raises(grpc.RpcError) as e:
        call()
    return e.value.code()


# --------------------------------------------------------------------------- per-kind probes
# write(twin, entry) -> token: tell the daemon something it must keep;
# check(twin, entry, token): after its restart, it still has it;
# refuse(twin, entry) -> (what it answered, what the real system answers) for a request it cannot serve.


def gpu_write(twin: Twin, d: DaemonEntry) -> str:
    stub = gpu_node_pb2_grpc.GpuNodeStub(channel(d.grpc))
    return stub.AcquireLease(gpu_node_pb2.GpuAcquireLeaseRequest(job_id="conformance", count=1),
                             timeout=RPC_TIMEOUT).lease.id


def gpu_check(twin: Twin, d: DaemonEntry, lease_id: str) -> None:
    stub = gpu_node_pb2_grpc.GpuNodeStub(channel(d.grpc))
    leases = stub.ListLeases(gpu_node_pb2.GpuListLeasesRequest(), timeout=RPC_TIMEOUT).leases
    assert lease_id in {lease.id for lease in leases if lease.active}


def gpu_refuse(twin: Twin, d: DaemonEntry) -> tuple[Any, Any]:
    stub = gpu_node_pb2_grpc.GpuNodeStub(channel(d.grpc))
    # nvidia-smi -i 99: "No devices were found" for an index the server does not have
    return rpc_code(lambda: stub.GetGpu(gpu_node_pb2.GpuGetGpuRequest(gpu=99), timeout=RPC_TIMEOUT)), \
        grpc.StatusCode.NOT_FOUND


PKEY = 0x0a12


def fabric_write(twin: Twin, d: DaemonEntry) -> int:
    stub = fabric_pb2_grpc.FabricStub(channel(d.grpc))
    stub.SetPartition(fabric_pb2.FabricSetPartitionRequest(partition=fabric_pb2.FabricPartition(
        name="conformance", pkey=PKEY, all_ports=True)), timeout=RPC_TIMEOUT)
    return PKEY


def fabric_check(twin: Twin, d: DaemonEntry, pkey: int) -> None:
    stub = fabric_pb2_grpc.FabricStub(channel(d.grpc))
    parts = stub.ListPartitions(fabric_pb2.FabricListPartitionsRequest(), timeout=RPC_TIMEOUT).partitions
    assert pkey in {p.pkey for p in parts}


def fabric_refuse(twin: Twin, d: DaemonEntry) -> tuple[Any, Any]:
    stub = fabric_pb2_grpc.FabricStub(channel(d.grpc))
    code = rpc_code(lambda: stub.SetPortState(fabric_pb2.FabricSetPortStateRequest(
        system="no-such-switch", port=1, enabled=False), timeout=RPC_TIMEOUT))
    return code, grpc.StatusCode.NOT_FOUND   # UFM: 404 for a port it does not know


def mon_write(twin: Twin, d: DaemonEntry) -> str:
    stub = ceph_pb2_grpc.CephMonStub(channel(d.grpc))
    stub.UserCreate(ceph_pb2.CephMonUserCreateRequest(user=ceph_pb2.CephRgwUser(uid="conformance", display_name="c")),
                    timeout=RPC_TIMEOUT)
    return "conformance"


def mon_check(twin: Twin, d: DaemonEntry, uid: str) -> None:
    stub = ceph_pb2_grpc.CephMonStub(channel(d.grpc))
    assert uid in {u.uid for u in stub.UserList(ceph_pb2.CephMonUserListRequest(), timeout=RPC_TIMEOUT).users}


def mon_refuse(twin: Twin, d: DaemonEntry) -> tuple[Any, Any]:
    stub = ceph_pb2_grpc.CephMonStub(channel(d.grpc))
    # `ceph osd out 999`: "osd.999 does not exist" (ENOENT)
    return rpc_code(lambda: stub.OsdCommand(ceph_pb2.CephMonOsdCommandRequest(osd=999, command="out"),
                                            timeout=RPC_TIMEOUT)), grpc.StatusCode.NOT_FOUND


CHUNK = ceph_pb2.CephChunkKey(pg="1.0", object="conformance", shard=0)


def osd_write(twin: Twin, d: DaemonEntry) -> bytes:
    stub = ceph_pb2_grpc.CephOsdStub(channel(d.grpc))
    stub.PutChunk(ceph_pb2.CephOsdPutChunkRequest(key=CHUNK, data=b"kept across kill -9"), timeout=RPC_TIMEOUT)
    return b"kept across kill -9"


def osd_check(twin: Twin, d: DaemonEntry, data: bytes) -> None:
    stub = ceph_pb2_grpc.CephOsdStub(channel(d.grpc))
    got = stub.GetChunk(ceph_pb2.CephOsdGetChunkRequest(key=CHUNK), timeout=RPC_TIMEOUT)
    assert got.found and got.data == data


def osd_refuse(twin: Twin, d: DaemonEntry) -> tuple[Any, Any]:
    stub = ceph_pb2_grpc.CephOsdStub(channel(d.grpc))
    return rpc_code(lambda: stub.SetFault(ceph_pb2.CephOsdSetFaultRequest(slow_factor=0.5), timeout=RPC_TIMEOUT)), \
        grpc.StatusCode.INVALID_ARGUMENT


S3_KEYS = ("CONFORMANCEKEY0000001", "conformance-secret")


def s3(twin: Twin, d: DaemonEntry) -> Any:
    mon = ceph_pb2_grpc.CephMonStub(channel(first(twin, "ceph_mon").grpc))
    users = mon.UserList(ceph_pb2.CephMonUserListRequest(), timeout=RPC_TIMEOUT).users
    if "conformance-s3" not in {u.uid for u in users}:
        mon.UserCreate(ceph_pb2.CephMonUserCreateRequest(user=ceph_pb2.CephRgwUser(
            uid="conformance-s3", display_name="c", access_key=S3_KEYS[0], secret_key=S3_KEYS[1])),
            timeout=RPC_TIMEOUT)
    return boto3.client("s3", endpoint_url=d.typed(RgwEntry).s3, aws_access_key_id=S3_KEYS[0],
                        aws_secret_access_key=S3_KEYS[1], region_name="default",
                        config=Config(retries={"max_attempts": 1}, connect_timeout=10, read_timeout=30))


def rgw_write(twin: Twin, d: DaemonEntry) -> str:
    s3(twin, d).create_bucket(Bucket="conformance")
    return "conformance"


def rgw_check(twin: Twin, d: DaemonEntry, bucket: str) -> None:
    assert bucket in {b["Name"] for b in s3(twin, d).list_buckets()["Buckets"]}


def rgw_refuse(twin: Twin, d: DaemonEntry) -> tuple[Any, Any]:
    with pytest.raises(ClientError) as e:
        s3(twin, d).get_object(Bucket="no-such-bucket", Key="k")
    err = e.value.response
    return (err["ResponseMetadata"]["HTTPStatusCode"], err["Error"]["Code"]), (404, "NoSuchBucket")


def mds_call(twin: Twin, method: str, request: Any) -> Any:
    """A metadata call to whichever MDS is active (after a kill -9 the standby takes the MDT over)."""
    deadline = time.monotonic() + 120
    while True:
        for address in LustreSection.require(twin.manifest, twin.run.path).mds:
            stub = lustre_pb2_grpc.LustreMdsStub(channel(address))
            try:
                return getattr(stub, method)(request, timeout=RPC_TIMEOUT)
            except grpc.RpcError as e:
                if e.code() != grpc.StatusCode.UNAVAILABLE or time.monotonic() > deadline:
                    raise
        time.sleep(0.5)


def active_mds(twin: Twin) -> DaemonEntry:
    """The MDS that holds the MDT: a standby's LustreMds health is NOT_SERVING (it refuses every call)."""
    deadline = time.monotonic() + 120
    while True:
        for d in twin.manifest.daemons_of("lustre_mds"):
            try:
                status = lustre_pb2_grpc.LustreMdsStub(channel(d.grpc)).Status(lustre_pb2.LustreMdsStatusRequest(),
                                                                                timeout=RPC_TIMEOUT)
            except grpc.RpcError:
                continue
            if status.role == "active":
                return d
        assert time.monotonic() < deadline, "no MDS became active"
        time.sleep(0.2)


def mds_write(twin: Twin, d: DaemonEntry) -> str:
    mds_call(twin, "Create", lustre_pb2.LustreMdsCreateRequest(path="/conformance", mode=0o644))
    return "/conformance"


def mds_check(twin: Twin, d: DaemonEntry, path: str) -> None:
    assert mds_call(twin, "Getattr", lustre_pb2.LustreMdsGetattrRequest(path=path)).attr.size == 0


def mds_refuse(twin: Twin, d: DaemonEntry) -> tuple[Any, Any]:
    # stat on a name that is not there: ENOENT
    return rpc_code(lambda: mds_call(twin, "Getattr", lustre_pb2.LustreMdsGetattrRequest(path="/no-such"))), \
        grpc.StatusCode.NOT_FOUND


OBJ = lustre_pb2.LustreObjectRef(ost=0, objid=0xC0F, seq=0x100000000)


def ost0_servers(twin: Twin) -> list[str]:
    return next(o.servers for o in LustreSection.require(twin.manifest, twin.run.path).osts if o.index == 0)


def oss_call(twin: Twin, method: str, request: Any) -> Any:
    deadline = time.monotonic() + 120
    while True:
        for address in ost0_servers(twin):
            try:
                return getattr(lustre_pb2_grpc.LustreOssStub(channel(address)), method)(request, timeout=RPC_TIMEOUT)
            except grpc.RpcError as e:
                if e.code() not in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.FAILED_PRECONDITION) \
                        or time.monotonic() > deadline:
                    raise
        time.sleep(0.5)


def oss_entry(twin: Twin) -> DaemonEntry:
    return next(d for d in twin.manifest.daemons_of("lustre_oss") if 0 in d.typed(OssEntry).osts)


def oss_write(twin: Twin, d: DaemonEntry) -> bytes:
    data = b"striped and synced"
    oss_call(twin, "Write", lustre_pb2.LustreOssWriteRequest(obj=OBJ, offset=0, data=data, sync=True))
    return data


def oss_check(twin: Twin, d: DaemonEntry, data: bytes) -> None:
    got = oss_call(twin, "Read", lustre_pb2.LustreOssReadRequest(obj=OBJ, offset=0, length=len(data)))
    assert got.data == data


def oss_refuse(twin: Twin, d: DaemonEntry) -> tuple[Any, Any]:
    stub = lustre_pb2_grpc.LustreOssStub(channel(d.grpc))
    bad = lustre_pb2.LustreOssReadRequest(obj=lustre_pb2.LustreObjectRef(ost=0x3ff, objid=1), offset=0, length=1)
    # -ENODEV: the OST is not served here, and the client's import moves to the failover NID
    # (UNAVAILABLE is what sends the twin's client to the next server of the OST)
    return rpc_code(lambda: stub.Read(bad, timeout=RPC_TIMEOUT)), grpc.StatusCode.UNAVAILABLE


def slurm_entry(twin: Twin) -> DaemonEntry:
    """Slurm's daemon runs on demand: started here (`twin slurm up`) the first time a test needs it."""
    from services.slurm.cluster import APT_PACKAGES, missing_tools

    if reason := skip_reason("Slurm's conformance (slurmctld, slurmd, munged)", missing_tools(), list(APT_PACKAGES)):
        pytest.skip(reason)
    if not Manifest.load(twin.run.manifest).daemons_of("slurm"):
        twin.slurm().up()
    return Manifest.load(twin.run.manifest).daemons_of("slurm")[0]


def scontrol(twin: Twin, *args: str) -> Any:
    return twin.slurm().command("scontrol", *args, timeout=RPC_TIMEOUT)


def slurm_write(twin: Twin, d: DaemonEntry) -> tuple[str, str]:
    """Drain a node, then wait until slurmctld has saved its node state (it saves on a timer: a kill -9
    before that loses the change, as it would on a real controller)."""
    node, reason = first(twin, "gpu_node").name, "conformance"
    saved = twin.run.path / "slurm" / "state" / "node_state"
    before = saved.stat().st_mtime_ns if saved.exists() else 0
    r = scontrol(twin, "update", f"NodeName={node}", "State=DRAIN", f"Reason={reason}")
    assert r.returncode == 0, r.stderr
    deadline = time.monotonic() + 120
    while not (saved.exists() and saved.stat().st_mtime_ns > before):
        assert time.monotonic() < deadline, f"slurmctld did not save {saved} after the drain"
        time.sleep(0.2)
    return node, reason


def slurm_check(twin: Twin, d: DaemonEntry, drained: tuple[str, str]) -> None:
    node, reason = drained
    r = twin.slurm().sinfo("-h", "-N", "-n", node, "-o", "%T|%E")
    assert f"drained|{reason}" in r.stdout.splitlines(), r.stdout + r.stderr   # slurmctld's saved node state


def slurm_refuse(twin: Twin, d: DaemonEntry) -> tuple[Any, Any]:
    r = scontrol(twin, "update", "NodeName=no-such-node", "State=DRAIN", "Reason=x")
    return (r.returncode, r.stderr.strip()), (1, "slurm_update error: Invalid node name specified")


@dataclass(frozen=True)
class Probe:
    pick: Callable[[Twin], DaemonEntry]
    write: Callable[[Twin, DaemonEntry], Any]
    check: Callable[[Twin, DaemonEntry, Any], None]
    refuse: Callable[[Twin, DaemonEntry], tuple[Any, Any]]


PROBES = {
    "gpu_node": Probe(lambda t: first(t, "gpu_node"), gpu_write, gpu_check, gpu_refuse),
    "fabric": Probe(lambda t: first(t, "fabric"), fabric_write, fabric_check, fabric_refuse),
    "ceph_mon": Probe(lambda t: first(t, "ceph_mon"), mon_write, mon_check, mon_refuse),
    "ceph_osd": Probe(lambda t: first(t, "ceph_osd"), osd_write, osd_check, osd_refuse),
    "ceph_rgw": Probe(lambda t: first(t, "ceph_rgw"), rgw_write, rgw_check, rgw_refuse),
    "lustre_mds": Probe(active_mds, mds_write, mds_check, mds_refuse),
    "lustre_oss": Probe(oss_entry, oss_write, oss_check, oss_refuse),
    "slurm": Probe(slurm_entry, slurm_write, slurm_check, slurm_refuse),
}
KINDS = sorted(daemon_kinds())


def test_every_kind_has_a_probe() -> None:
    assert set(PROBES) == set(KINDS), "a daemon kind of the registry has no conformance probe (or a probe no kind)"


# --------------------------------------------------------------------------- the shared checks


def live(twin: Twin, name: str) -> dict[str, Any]:
    return json.loads((twin.run.path / "daemons.json").read_text())["daemons"][name]


def wait_serving(address: str, service: str = "", timeout: float = 120.0) -> None:
    stub = health_pb2_grpc.HealthStub(channel(address))
    deadline = time.monotonic() + timeout
    while True:
        try:
            status = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=5).status
            if status == health_pb2.HealthCheckResponse.SERVING:
                return
        except grpc.RpcError:
            pass
        assert time.monotonic() < deadline, f"{address} ({service or 'overall'}) not SERVING in {timeout:.0f}s"
        time.sleep(0.2)


@pytest.mark.parametrize("kind", KINDS)
def test_health_and_reflection(twin: Twin, kind: str) -> None:
    d = PROBES[kind].pick(twin)
    wait_serving(d.health_address, timeout=5)
    if d.service:
        wait_serving(d.health_address, d.service, timeout=5)
    services = ProtoReflectionDescriptorDatabase(channel(d.health_address)).get_services()
    assert "grpc.health.v1.Health" in services
    if d.service:
        assert d.service in services, f"{d.name} does not reflect {d.service}: {services}"


@pytest.mark.parametrize("kind", KINDS)
def test_kill_9_then_restart_with_state_and_a_typed_start_event_on_the_twin_clock(twin: Twin, kind: str) -> None:
    probe = PROBES[kind]
    d = probe.pick(twin)
    token = probe.write(twin, d)
    before = live(twin, d.name)
    clock = twin.manifest.clock.to_clock()
    with twin.events(f"events/{d.name}/daemon_start") as bus:
        earliest = clock.now()
        assert same_process(before["pid"], before["start"])
        os.kill(before["pid"], signal.SIGKILL)
        event = bus.wait_for(lambda e: e["source"] == d.name and e["restarts"] > before["restarts"], timeout=120)
        latest = clock.now()
    event.pop("_topic", None)
    envelope, payload = events.validate(event)
    assert (envelope.subsystem, payload.daemon_kind) == ("twin", kind)
    assert earliest <= envelope.time <= latest, "the start event is not stamped on the twin clock"
    wait_serving(d.health_address)
    after = live(twin, d.name)
    assert after["pid"] != before["pid"] and after["restarts"] == before["restarts"] + 1
    probe.check(twin, d, token)


@pytest.mark.parametrize("kind", KINDS)
def test_a_request_it_cannot_serve_is_refused_as_the_real_system_refuses_it(twin: Twin, kind: str) -> None:
    probe = PROBES[kind]
    answered, expected = probe.refuse(twin, probe.pick(twin))
    assert answered == expected
