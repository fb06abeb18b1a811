"""The OSS's bulk reads (services/lustre/bulk.py) from a real BulkServer: over TCP the bytes come with
sendfile, to a client on the OSS's host as the object file's descriptor; both give the same bytes,
zeros past the end of a file truncated under the OSS's size, ENODEV for an OST it does not serve."""

from __future__ import annotations

import errno
import os
import socket
from pathlib import Path

import pytest

from services.lustre.bulk import BulkClient, BulkError, BulkServer


class _Objects:
    """An OST's objects as the OSS's store has them: a size (from its metadata) and a file."""

    def __init__(self, root: Path) -> None:
        self.root, self.sizes = root, {}

    def put(self, objid: int, data: bytes, size: int | None = None) -> None:
        self.path(0, objid).write_bytes(data)
        self.sizes[objid] = len(data) if size is None else size

    def size(self, seq: int, objid: int) -> int | None:
        return self.sizes.get(objid)

    def path(self, seq: int, objid: int) -> Path:
        return self.root / f"{seq}.{objid}"


@pytest.fixture
def served(tmp_path: Path):  # noqa: ANN201
    objects = _Objects(tmp_path)
    timed: list[int] = []

    def take_time(store: _Objects, n: int, fn):  # noqa: ANN001, ANN202 - the OSS's NVMe model, counted
        timed.append(n)
        return fn()

    with socket.create_server(("127.0.0.1", 0)) as probe:
        free = probe.getsockname()[1]
    address = f"127.0.0.1:{free - 1}"   # the gRPC address whose bulk port (+1) is free
    server = BulkServer(address, lambda ost: objects if ost == 3 else None, take_time)
    server.start()
    try:
        yield objects, address, timed
    finally:
        server.close()


@pytest.mark.parametrize("local", [False, True], ids=["tcp", "this-host"])
def test_a_read_gives_the_objects_bytes_and_takes_the_oss_time(served, local: bool) -> None:  # noqa: ANN001
    objects, address, timed = served
    data = os.urandom((3 << 20) + 5)
    objects.put(7, data)
    client = BulkClient(address, local=local)
    try:
        assert client.read(3, 0, 7, 0, 1 << 20) == data[: 1 << 20]
        assert client.read(3, 0, 7, 3 << 20, 1 << 20) == data[3 << 20:]   # the tail: 5 bytes
        assert client.read(3, 0, 7, 4 << 20, 1 << 20) == b""               # past the end
        sock = client.pool.get_nowait()
        assert (sock.family == socket.AF_UNIX) is local   # on this host: the OSS's Unix socket
        client.pool.put(sock)
        with pytest.raises(BulkError) as e:
            client.read(9, 0, 7, 0, 10)
        assert e.value.errno == errno.ENODEV
    finally:
        client.close()
    assert timed == [1 << 20, 5]


@pytest.mark.parametrize("local", [False, True], ids=["tcp", "this-host"])
def test_a_file_shorter_than_its_size_reads_as_zeros_past_its_end(served, local: bool) -> None:  # noqa: ANN001
    objects, address, _ = served
    objects.put(8, b"abc" * 1000, size=5000)   # the OSS's size says more than the file holds
    client = BulkClient(address, local=local)
    try:
        assert client.read(3, 0, 8, 0, 8192) == b"abc" * 1000 + bytes(2000)
    finally:
        client.close()
