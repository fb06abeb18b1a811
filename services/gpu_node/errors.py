"""The one error type the GPU-node model raises for bad requests.

Codes are gRPC status names, mapped to gRPC (and HTTP) by emulator.errors.DaemonError; messages name the node, the GPU
and the thing, so a caller can act on them without reading code.
"""

from __future__ import annotations

from typing import Literal

from emulator.errors import DaemonError

ErrorCode = Literal[
    "NOT_FOUND", "INVALID_ARGUMENT", "FAILED_PRECONDITION", "RESOURCE_EXHAUSTED", "ALREADY_EXISTS"
]


class ModelError(DaemonError):
    """A refused request. Raised before any mutation, so the model is unchanged. Its gRPC status comes
    from emulator.errors.DaemonError, the one mapping."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(code, message)

    def prefixed(self, prefix: str) -> ModelError:
        """The same error with `prefix: ` in front (pure helpers know no node or GPU names)."""
        return ModelError(self.code, f"{prefix}: {self.message}")
