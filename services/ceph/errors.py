"""Errors the Ceph models raise. Each names what was asked for and why it cannot be done.

Codes are gRPC status names (as in the GPU-node model) so the coming servicers map them one to one;
the S3 gateway maps them to S3 error codes (e.g. UNAVAILABLE → 503 SlowDown/ServiceUnavailable).
"""

from __future__ import annotations

from typing import Literal

ErrorCode = Literal[
    "NOT_FOUND", "INVALID_ARGUMENT", "FAILED_PRECONDITION", "UNAVAILABLE", "DATA_LOSS", "ALREADY_EXISTS"
]


class CephError(Exception):
    """A refused request. Raised before any mutation, so the model is unchanged."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code: ErrorCode = code
        self.message = message


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
