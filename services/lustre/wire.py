"""What the Lustre daemons and clients share on the wire: model <-> protobuf conversions, the errno
carried by a gRPC error, channel options sized for striped I/O, and the `lustre.lov` xattr bytes.

Errors: `answer` runs a servicer's model call and maps a LustreError as services/lustre/errors.py says
(the errno travels in the trailing metadata; `errors.errno_of` reads it back on the client).
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import struct
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, TypeVar

import grpc

from clustertwin.v1 import lustre_pb2 as pb
from emulator import paging
from emulator.errors import DaemonError
from services.lustre.errors import LustreError
from services.lustre.events import EventPublisher
from services.lustre.layout import Layout, StripeObject, StripeSpec

MAX_MESSAGE = 256 * 1024 * 1024
CHANNEL_OPTIONS = [
    ("grpc.max_send_message_length", MAX_MESSAGE),
    ("grpc.max_receive_message_length", MAX_MESSAGE),
    ("grpc.so_reuseport", 0),
    # a bigger HTTP/2 stream window than gRPC's default: 1 MiB object reads go ~1.6x faster here
    ("grpc.http2.lookahead_bytes", 8 * 1024 * 1024),
]
# The clients' unary calls as framed calls (emulator/frame_rpc.py): the MDS's on its gRPC port + 1, an
# OSS's on its gRPC port + 2 (+ 1 is its bulk port, bulk.py); the same servicer answers both ports.
MDS_FRAMED_OFFSET = 1
OSS_FRAMED_OFFSET = 2
T = TypeVar("T")
IO_UNIT = 1024 * 1024   # the size of one object read RPC: 1 MiB messages move fastest through gRPC Python


async def answer(context: grpc.aio.ServicerContext, fn: Callable[..., T], *args: Any) -> T:
    """Run a blocking model call for a servicer in a worker thread (the store and the object files block);
    a LustreError it raises aborts the call as errors.py maps it (status, message, errno metadata)."""
    try:
        return await asyncio.to_thread(fn, *args)
    except LustreError as e:
        await e.abort(context)


@functools.lru_cache(maxsize=65536)   # every page of a big directory asks again for every name
def dir_cookie(name: str) -> int:
    """A directory entry's readdir cookie: a 63-bit hash of its name, as ldiskfs's htree gives Lustre's
    readdir. Pages go in cookie order and the next starts after the last cookie returned, so an entry
    added or removed between two pages moves no other entry across the page boundary."""
    return int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "big") >> 1


def page_of(rpc: str, items: Sequence[T], page_size: int, page_token: str,
            key: Callable[[T], int] | None = None, keys: Sequence[int] | None = None) -> tuple[Sequence[T], str]:
    """emulator/paging.py's page, a bad token or size refused as EINVAL (INVALID_ARGUMENT)."""
    try:
        return paging.page(rpc, items, page_size, page_token, key, keys)
    except DaemonError as e:
        raise LustreError("EINVAL", e.message) from None


def event_pb(ev: dict[str, Any]) -> pb.LustreEvent:
    """A published event (services/lustre/events.py) as WatchEvents streams it."""
    out = pb.LustreEvent(seq=ev["seq"], time=ev["time"], node=ev["node"], kind=ev["kind"], message=ev["message"],
                         oss=ev.get("oss", ""), to=ev.get("to", ""), **{"from": ev.get("from", "")})
    for k in ("ost", "mdt"):
        if ev.get(k) is not None:
            setattr(out, k, ev[k])
    f = ev.get("fault")
    if f is not None:
        out.fault.CopyFrom(pb.LustreFault(id=f["id"], kind=f["kind"], oss=f["params"]["oss"],
                                          ost=f["params"].get("ost"), injected_at=f["injected_at"],
                                          active=f["active"], cleared_at=f.get("cleared_at"), effect=f["effect"]))
    return out


async def watch(events: EventPublisher, since_seq: int) -> AsyncIterator[pb.LustreEvent]:
    """The events the daemon kept after since_seq, then each new one (a since_seq from the future, e.g.
    of the daemon's previous run, means "from now on"), until the call ends."""
    async for ev in events.ring.stream(since_seq):
        yield event_pb(ev)


# ---- layouts -------------------------------------------------------------------------------------

def layout_to_pb(layout: Layout) -> pb.LustreLayout:
    return pb.LustreLayout(stripe_size=layout.stripe_size, gen=layout.gen, pattern=layout.pattern,
                           objects=[pb.LustreObject(ost=o.ost, objid=o.objid, seq=o.seq) for o in layout.objects])


def layout_from_pb(msg: pb.LustreLayout) -> Layout:
    return Layout(msg.stripe_size, tuple(StripeObject(o.ost, o.objid, o.seq) for o in msg.objects), msg.gen,
                  msg.pattern or "raid0")


def spec_to_pb(spec: StripeSpec) -> pb.LustreStripeSpec:
    return pb.LustreStripeSpec(count=spec.count, size=spec.size, index=spec.index)


def spec_from_pb(msg: pb.LustreStripeSpec) -> StripeSpec:
    return StripeSpec(msg.count, msg.size, msg.index)


# ---- the lustre.lov xattr --------------------------------------------------------------------------
# Real Lustre returns the binary `struct lov_user_md_v1` (lustre_user.h) for `getfattr -n lustre.lov`,
# little-endian: magic, pattern, lmm_oi (the file's FID), stripe size, stripe count, layout gen,
# then per object `struct lov_user_ost_data_v1` {ost_oi (objid, seq), ost_gen, ost_idx}.

LOV_USER_MAGIC_V1 = 0x0BD10BD0
LOV_PATTERN_RAID0 = 0x001
_LOV_HEAD = struct.Struct("<IIQIIIHH")
_LOV_OBJ = struct.Struct("<QQII")


def lov_xattr(layout: Layout, fid_seq: int, fid_oid: int, fid_ver: int = 0) -> bytes:
    out = bytearray(_LOV_HEAD.pack(LOV_USER_MAGIC_V1, LOV_PATTERN_RAID0, fid_seq, fid_oid, fid_ver,
                                   layout.stripe_size, layout.stripe_count, layout.gen))
    for o in layout.objects:
        out += _LOV_OBJ.pack(o.objid, o.seq, 0, o.ost)
    return bytes(out)


def parse_lov_xattr(data: bytes) -> tuple[Layout, tuple[int, int, int]]:
    """The layout and file FID (seq, oid, ver) in a `lustre.lov` value (EINVAL if it is not one)."""
    if len(data) < _LOV_HEAD.size:
        raise LustreError("EINVAL", f"lustre.lov value of {len(data)} bytes is shorter than its header")
    magic, _pattern, seq, oid, ver, size, count, gen = _LOV_HEAD.unpack_from(data)
    if magic != LOV_USER_MAGIC_V1:
        raise LustreError("EINVAL", f"lustre.lov magic {magic:#x} is not LOV_USER_MAGIC_V1")
    if len(data) < _LOV_HEAD.size + count * _LOV_OBJ.size:
        raise LustreError("EINVAL", f"lustre.lov value too short for {count} objects")
    objs = []
    for i in range(count):
        objid, oseq, _gen, idx = _LOV_OBJ.unpack_from(data, _LOV_HEAD.size + i * _LOV_OBJ.size)
        objs.append(StripeObject(idx, objid, oseq))
    return Layout(size, tuple(objs), gen), (seq, oid, ver)
