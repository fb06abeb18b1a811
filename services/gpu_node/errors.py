"""The one error type the GPU-node model raises for bad requests.

Codes are gRPC status names so the servicer maps them one to one; messages name the node, the GPU
and the thing, so a caller can act on them without reading code.
"""

from __future__ import annotations

from typing import Literal

ErrorCode = Literal[
    "NOT_FOUND", "INVALID_ARGUMENT", "FAILED_PRECONDITION", "RESOURCE_EXHAUSTED", "ALREADY_EXISTS"
]


class ModelError(Exception):
    """A refused request. Raised before any mutation, so the model is unchanged."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code: ErrorCode = code
        self.message = message

    def prefixed(self, prefix: str) -> ModelError:
        """The same error with `prefix: ` in front (pure helpers know no node or GPU names)."""
        return ModelError(self.code, f"{prefix}: {self.message}")
