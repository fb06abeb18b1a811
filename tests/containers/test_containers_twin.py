"""A user's test against the twin in a container: client code, a fault, the outcome."""

from __future__ import annotations

import docker
from emulator.client import Twin
from emulator.testing import TwinContainer


def test_xid79_ends_a_lease_in_the_containerised_twin(twin_image: str) -> None:
    with TwinContainer(twin_image, topology="mini") as tc:
        container_id = tc.get_container_id()
        print(f"\nimage {twin_image}: {tc.image_size() / 1e6:.0f} MB; twin healthy in {tc.started_in:.1f}s")
        assert tc.started_in is not None   # its time against the 20 s target: python -m bench --only timings
        twin: Twin = tc.twin
        assert "gpu001" in twin.gpu_nodes
        assert tc.endpoints()["grpc"]["gpu001"] == twin.daemon("gpu001").grpc

        node = twin.gpu_node("gpu001")
        lease = node.lease("job-in-container", count=8)
        assert len(lease.devices) == 8 and node.lease_info(lease.id).active
        node.inject_xid(gpu=3, xid=79)
        ended = node.lease_info(lease.id)
        assert not ended.active
        assert "79" in ended.end_reason
    # Leaving the block stopped the twin and removed its container.
    assert not docker.from_env().containers.list(all=True, filters={"id": container_id})


def test_fixture_gives_a_connected_client(twin: Twin, twin_endpoints: dict) -> None:
    assert twin_endpoints["mqtt"].startswith("mqtt://127.")
    assert len(twin.gpu_node("gpu002").gpus()) == 8
