"""The messenger's frames (services/ceph/msgr.py): a message, then a data segment with each
operation's bytes in order, over a real socket pair."""

from __future__ import annotations

import socket
import threading

import pytest

from clustertwin.v1 import ceph_pb2 as pb
from services.ceph.msgr import HEADER, frame, sendmsg_all, split


def _ops() -> list[tuple[pb.CephChunkOp, bytes]]:
    big = bytes(range(256)) * 4096   # 1 MiB: more than a socket takes at once
    return [(pb.CephChunkOp(id=1, op="put", key=pb.CephChunkKey(pg="1.0", object="a", shard=0)), big),
            (pb.CephChunkOp(id=2, op="delete", key=pb.CephChunkKey(pg="1.0", object="b", shard=1)), b""),
            (pb.CephChunkOp(id=3, op="put", key=pb.CephChunkKey(pg="1.1", object="c", shard=2)), b"xyz")]


def test_a_frame_crosses_a_socket_and_splits_back_into_its_operations() -> None:
    ops = _ops()
    for op, data in ops:
        op.data_length = len(data)
    parts = frame(pb.CephOsdChunkStreamRequest(ops=[op for op, _ in ops]), [d for _, d in ops if d])
    a, b = socket.socketpair()
    with a, b:
        a.settimeout(10)
        b.settimeout(10)
        total = sum(len(p) for p in parts)
        got = bytearray()
        t = threading.Thread(target=sendmsg_all, args=(a, parts))
        t.start()
        while len(got) < total:
            got += b.recv(1 << 20)
        t.join()
    n, nbytes = HEADER.unpack_from(got)
    msg = pb.CephOsdChunkStreamRequest.FromString(bytes(got[HEADER.size: HEADER.size + n]))
    assert nbytes == len(ops[0][1]) + 3 and not any(op.data for op in msg.ops)
    received: list[tuple[pb.CephChunkOp, object]] = [(op, b"") for op in msg.ops]
    split(received, got[HEADER.size + n:])   # type: ignore[arg-type]
    assert [(op.id, bytes(d)) for op, d in received] == [(op.id, d) for op, d in ops]


def test_a_data_segment_that_does_not_add_up_is_refused() -> None:
    ops = _ops()
    for op, data in ops:
        op.data_length = len(data)
    with pytest.raises(ValueError, match="data segment"):
        split(ops, b"short")   # type: ignore[arg-type]


def test_more_buffers_than_one_sendmsg_takes_all_arrive_in_order() -> None:
    parts = [bytes([i % 251]) * (1 + i % 7) for i in range(3000)]   # over IOV_MAX (1024) buffers
    a, b = socket.socketpair()
    with a, b:
        a.settimeout(10)
        b.settimeout(10)
        total = sum(len(p) for p in parts)
        t = threading.Thread(target=sendmsg_all, args=(a, parts))
        t.start()
        got = bytearray()
        while len(got) < total:
            got += b.recv(1 << 20)
        t.join()
    assert bytes(got) == b"".join(parts)
