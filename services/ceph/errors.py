"""Errors the Ceph models raise. Each names what was asked for and why it cannot be done.

Codes are gRPC status names (as in the GPU-node model), mapped both ways here and nowhere else: a
servicer aborts with `e.grpc_status`, a client of a Ceph daemon raises `CephError.from_rpc(e)`. The S3
gateway maps them to S3 error codes (rgw/store.py: UNAVAILABLE → 503 ServiceUnavailable, after waiting).
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, Literal, NoReturn, get_args

import grpc

from emulator.errors import DaemonError

ErrorCode = Literal[
    "NOT_FOUND", "INVALID_ARGUMENT", "FAILED_PRECONDITION", "UNAVAILABLE", "DATA_LOSS", "ALREADY_EXISTS"
]
CODES: frozenset[str] = frozenset(get_args(ErrorCode))


class CephError(DaemonError):
    """A refused request. Raised before any mutation, so the model is unchanged. Its gRPC status (and
    HTTP status) comes from emulator.errors.DaemonError, the one mapping."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(code, message)

    @classmethod
    def from_rpc(cls, e: grpc.RpcError, what: str = "", known: frozenset[str] | None = CODES) -> CephError:
        """A failed call to a Ceph daemon as the error it raised there (`what: ` before its message); a
        status no Ceph model raises (a deadline, the daemon gone) is UNAVAILABLE: the backend is away."""
        return super().from_rpc(e, what, known)  # type: ignore[return-value]


async def abort(context: grpc.aio.ServicerContext, e: CephError) -> NoReturn:
    """End a call with the error's status and message."""
    await e.abort(context)


async def ceph_call(context: grpc.aio.ServicerContext, call: Awaitable[Any]) -> Any:
    """Await `call`; a CephError (or emulator/paging.py's DaemonError) it raises ends the call with its
    status (the one place servicers map)."""
    try:
        return await call
    except DaemonError as e:
        await e.abort(context)


class InsufficientChunks(CephError):
    """Fewer than k chunks of an object can be read: it cannot be reconstructed."""

    def __init__(self, have: int, need: int, total: int, what: str = "object") -> None:
        self.have, self.need, self.total = have, need, total
        missing = total - have
        super().__init__(
            "DATA_LOSS",
            f"{what}: {missing} of {total} chunks missing, only {have} available; "
            f"decoding needs any {need} ({need - have} more)",
        )


class PlacementError(CephError):
    """CRUSH cannot place `size` shards under the rule (too few failure domains)."""

    def __init__(self, message: str) -> None:
        super().__init__("FAILED_PRECONDITION", message)


class PgUnavailable(CephError):
    """Client I/O on a PG that is not active (peered, down, incomplete): real clients block."""

    def __init__(self, pgid: str, state: str, why: str) -> None:
        self.pgid, self.state = pgid, state
        super().__init__("UNAVAILABLE", f"pg {pgid} is {state}: {why}")
