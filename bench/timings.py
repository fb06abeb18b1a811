"""The times the tests used to assert (issue 13 case 8). A test checks that a thing happens and is right;
how long it took is a figure, measured here against its old bound, since on a loaded 2-core runner a
wall-clock assert is a flake waiting to happen. Each row says which test the operation comes from.

    .venv/bin/python -m bench.timings [--repeats 3]
    .venv/bin/python -m bench --only timings

Needs root, OpenSM/ibsim and namespaces for the fabric and netns rows (`make install`); on a shared
machine run it under `flock /tmp/clustertwin-netns.lock` (it starts a `--network netns` twin). The
container row needs the image from docker/build.sh and is skipped without it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

Row = tuple[str, str, str, bool]


def median_of(repeats: int, once: Callable[[], float]) -> float:
    return statistics.median(once() for _ in range(repeats))


def row(name: str, seconds: float, target: float, strict: bool = False) -> Row:
    ok = seconds < target if strict else seconds <= target
    return (name, f"{seconds:.2f} s", f"{'<' if strict else '<='} {target:g} s", ok)


def subnet_rows(repeats: int) -> list[Row]:
    """tests/fabric: test_fabric_lifecycle (start), test_fabric_partitions (sweep), test_fabric_subnet (reroute)."""
    from emulator.topology import load_topology
    from services.fabric.netfile import make_fabric_plan
    from services.fabric.partitions import FULL, LIMITED, Partition
    from services.fabric.subnet import Subnet

    starts, sweeps, reroutes = [], [], []
    mini, rack = make_fabric_plan(load_topology("mini")), make_fabric_plan(load_topology("rack"))
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as tmp, Subnet(mini, Path(tmp)) as subnet:
            starts.append(subnet.start(timeout=60))
    with tempfile.TemporaryDirectory() as tmp, Subnet(rack, Path(tmp)) as subnet:
        subnet.start(timeout=60)
        a, b = rack.hca("gpu001", 0), rack.hca("gpu002", 1)
        part = Partition("storage", 0x2, [(a.port_guid(1), FULL), (b.port_guid(1), LIMITED)], ipoib=True)
        leaf = "ib-leaf01"
        dead = rack.cables_between(leaf, "ib-spine01")[0].a_port
        leaf_lid = subnet.snapshot().lid_of(leaf)
        for _ in range(repeats):
            sweeps.append(subnet.set_partitions([part], timeout=60).seconds)
            subnet.set_partitions([], timeout=60)
            t0 = time.monotonic()
            subnet.link_down(leaf, dead, timeout=60)
            subnet.lft(leaf_lid)   # the new table, read back as the test does
            reroutes.append(time.monotonic() - t0)
            subnet.link_up(leaf, dead, timeout=60)
    return [row("mini subnet: OpenSM start to SUBNET UP", statistics.median(starts), 30, strict=True),
            row("rack subnet: partition set -> swept (P_Key tables)", statistics.median(sweeps), 5, strict=True),
            row("rack subnet: leaf-spine link down -> LFT read back", statistics.median(reroutes), 5, strict=True)]


def ceph_up_row(repeats: int) -> Row:
    """tests/ceph/test_ceph_daemons.py's module twin: `mini --ceph` up and healthy."""
    from emulator import lifecycle
    from emulator.rundir import RunDir

    def once() -> float:
        with tempfile.TemporaryDirectory() as tmp:
            run = RunDir(Path(tmp) / "ceph")
            t0 = time.monotonic()
            lifecycle.up("mini", run, ceph=True, clock_scale=50.0, telemetry_interval=1.0, timeout=120)
            took = time.monotonic() - t0
            lifecycle.down(run)
            return took

    return row("mini --ceph up and healthy", median_of(repeats, once), 30, strict=True)


def fail_fast_rows(repeats: int) -> list[Row]:
    """tests/integration: a bad store URL (test_postgres_store) and a daemon the supervisor gave up on
    (test_lifecycle) end `up` at once; their deadline is 60 s, their old bounds 10 s and 5 s."""
    from emulator import lifecycle
    from emulator.client import Twin
    from emulator.manifest import DaemonEntry
    from emulator.rundir import RunDir

    def bad_store() -> float:
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.monotonic()
            try:
                Twin.up("mini", run_dir=Path(tmp) / "bad", store_url="postgresql+psycopg://nobody:x@127.0.0.1:1/x",
                        timeout=60)
            except lifecycle.TwinError:
                return time.monotonic() - t0
            raise AssertionError("a twin came up with an unreachable store")

    def gave_up() -> float:
        with tempfile.TemporaryDirectory() as tmp:
            run = RunDir(Path(tmp))
            run.create()
            (run.logs / "gpu001.log").write_text("OSError: [Errno 98] address already in use\n")
            run.daemons.write_text(json.dumps({"daemons": {"gpu001": {"state": "failed", "pid": 0}}}))
            daemons = [DaemonEntry(name="gpu001", kind="gpu_node", host="gpu001", grpc="127.0.0.1:9", addresses={})]
            t0 = time.monotonic()
            try:
                lifecycle.wait_healthy(run, daemons, time.monotonic() + 60, lambda *_: None)
            except lifecycle.TwinError:
                return time.monotonic() - t0
            raise AssertionError("wait_healthy accepted a failed daemon")

    return [row("unreachable store URL -> `up` refuses", median_of(repeats, bad_store), 10, strict=True),
            row("daemon given up on -> `up` stops waiting", median_of(repeats, gave_up), 5, strict=True)]


def netns_rows(repeats: int) -> list[Row]:
    """tests/network: test_planes (link down on the rack network) and test_fabric_drives_routes (a leaf
    port disabled through the fabric manager on `rack --fabric --network netns`)."""
    import grpc

    from clustertwin.v1 import fabric_pb2 as pb
    from clustertwin.v1 import fabric_pb2_grpc as pb_grpc
    from emulator.client import Twin
    from emulator.network import build_network, clean_network
    from emulator.topology import load_topology
    from services.fabric.netfile import make_fabric_plan

    link_downs = []
    with tempfile.TemporaryDirectory() as tmp:
        net = build_network(load_topology("rack"), prefix=f"bt{os.getpid() % 100000}", state_dir=Path(tmp))
        try:
            for _ in range(repeats):
                t0 = time.monotonic()
                net.link_down("ib-leaf01", "ib-spine01")
                link_downs.append(time.monotonic() - t0)
                net.link_up("ib-leaf01", "ib-spine01")
        finally:
            net.stop()
            clean_network(net.prefix)
    port = make_fabric_plan(load_topology("rack")).cables_between("ib-leaf01", "ib-spine01")[0].a_port
    disables = []
    with tempfile.TemporaryDirectory() as tmp, \
            Twin.up("rack", run_dir=Path(tmp) / "t", network="netns", fabric=True, timeout=120) as twin:
        (entry,) = twin.daemons("fabric")
        with grpc.insecure_channel(entry.grpc) as channel:
            stub = pb_grpc.FabricStub(channel)
            for _ in range(repeats):
                t0 = time.monotonic()
                stub.SetPortState(pb.FabricSetPortStateRequest(system="ib-leaf01", port=port, enabled=False),
                                  timeout=120)
                disables.append(time.monotonic() - t0)
                stub.SetPortState(pb.FabricSetPortStateRequest(system="ib-leaf01", port=port, enabled=True),
                                  timeout=120)
    return [row("rack netns: leaf-spine link down -> routing tables", statistics.median(link_downs), 1, strict=True),
            row("rack --fabric netns: SetPortState disable answered", statistics.median(disables), 20, strict=True)]


def container_row() -> Row:
    """tests/containers/test_containers_twin.py: the `mini` twin in its container, healthy and reachable."""
    import docker
    from emulator.testing import DEFAULT_IMAGE, TwinContainer

    try:
        docker.from_env().images.get(DEFAULT_IMAGE)
    except Exception as e:  # noqa: BLE001 - no engine, or no image: this row cannot be measured here
        return ("container twin healthy (mini)", f"skipped: {DEFAULT_IMAGE} not available ({type(e).__name__})",
                "<= 20 s", True)
    with TwinContainer(DEFAULT_IMAGE, topology="mini") as tc:
        assert tc.started_in is not None
        return row("container twin healthy (mini)", tc.started_in, 20)


def rows(repeats: int = 3) -> list[Row]:
    if os.geteuid() != 0:
        return [("moved test timings", "skipped (needs root)", "-", True)]
    return [*subnet_rows(repeats), ceph_up_row(repeats), *fail_fast_rows(repeats), *netns_rows(repeats),
            container_row()]


def main() -> None:
    from bench.report import report

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"Times the tests no longer assert, {args.repeats} runs (medians):")
    report(rows(args.repeats))


if __name__ == "__main__":
    main()
