"""The monitor's chunk I/O over one connection per OSD daemon (services/ceph/remote_chunkstore.py, the
OSD's servicer), both ways an OSD offers: its messenger (services/ceph/msgr.py, what the gateway uses)
and gRPC's ChunkStream. Operations started together go out on the connection and come back by id; an OSD's
error comes back as that operation's failure; a kill -9 of the OSD fails what waits on it as
UNAVAILABLE (as a unary call's would), and once the supervisor has restarted it the next operation
opens a new stream. Against the OSD daemons of a real `twin up mini --ceph --storage-timing fast`."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from emulator.health import SERVING, check_all
from services.ceph.manifest import OsdEntry
from services.ceph.msgr import msgr_address
from services.ceph.remote_chunkstore import RemoteChunkStore
from services.ceph.sdk import CephAdmin
from tests.ceph import helpers
from tests.ceph.helpers import wait_for

PG = "9.0"   # a PG no pool has: the monitor never touches these chunks


@pytest.fixture(scope="module")
def twin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CephAdmin]:
    with helpers.ceph_twin(tmp_path_factory, "stream", storage_timing="fast") as admin:
        yield admin


def _msgr(d: OsdEntry) -> str:
    """An OSD's messenger: on its host's storage address (services/ceph/plan.py), its gRPC port + 200."""
    return msgr_address(f"{d.addresses.get('storage', d.addresses['oob'])}:{d.grpc.rpartition(':')[2]}")


@pytest.fixture(params=["msgr", "grpc"])
def chunks(twin: CephAdmin, request: pytest.FixtureRequest) -> Iterator[RemoteChunkStore]:
    msgr = {o: _msgr(d) for o, d in twin.osds.items()} if request.param == "msgr" else None
    store = RemoteChunkStore({o: d.grpc for o, d in twin.osds.items()}, timeout=10.0, msgr=msgr)
    yield store
    store.close()


def test_chunks_put_together_come_back_by_key(chunks: RemoteChunkStore) -> None:
    data = {(0, (PG, f"obj{i}", i % 3)): bytes([i]) * (1000 + i) for i in range(12)}
    for (osd, key), body in data.items():
        chunks.put(osd, key, body)
    assert chunks.flush() == []
    chunks.prefetch(list(data))
    assert {k: chunks.get(*k) for k in data} == data
    assert chunks.fetch([(0, (PG, "absent", 0)), (0, (PG, "obj1", 1))]) == [None, data[(0, (PG, "obj1", 1))]]
    for osd, key in data:
        chunks.delete(osd, key)
    assert chunks.flush() == []
    assert chunks.fetch([(0, (PG, "obj1", 1))]) == [None]


def test_an_osd_error_is_that_operation_s_failure(chunks: RemoteChunkStore) -> None:
    chunks.put(1, ("", "bad pg", 0), b"x")      # the OSD refuses an empty PG id
    chunks.put(1, (PG, "good", 0), b"y")
    failures = chunks.flush()
    assert [(f.osd, f.key, f.op) for f in failures] == [(1, ("", "bad pg", 0), "put")]
    assert failures[0].why.startswith("INVALID_ARGUMENT: bad PG id")
    assert chunks.get(1, (PG, "good", 0)) == b"y"


def test_kill9_of_an_osd_fails_its_operations_and_a_new_stream_follows_the_restart(
        twin: CephAdmin, chunks: RemoteChunkStore) -> None:
    osd, key = 2, (PG, "survivor", 0)
    chunks.put(osd, key, b"before")
    assert chunks.flush() == []
    name = f"osd.{osd}"
    old = twin.kill(name)
    got = chunks.get(osd, key)       # on the stream the kill ended, or a new one to a dead daemon
    failures = chunks.take_failures()
    assert got is None and [(f.osd, f.op) for f in failures] == [(osd, "get")]
    assert failures[0].why.startswith(("UNAVAILABLE", "CANCELLED", "INTERNAL")), failures[0].why
    wait_for("the OSD restarted", lambda: twin.run.read(twin.run.daemons)["daemons"][name]["pid"] not in (0, old),
             timeout=10)
    grpc_addr = twin.osds[osd].grpc
    wait_for("the OSD serving", lambda: check_all([grpc_addr])[grpc_addr] == SERVING, timeout=20)
    # The chunk written before the kill is on disk; the next call opens a new stream (retried while gRPC
    # reconnects its channel).
    wait_for("the chunk read on a new stream", lambda: chunks.get(osd, key) == b"before", timeout=20, every=0.2)
