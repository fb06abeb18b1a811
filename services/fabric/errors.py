"""The fabric manager's one error type. Each names what was asked for and why it cannot be done, and
is raised before anything changes (a subnet step that failed is rolled back first).

The code is a gRPC status name, chosen where the error is raised, never read from the message. It
maps to gRPC (`grpc_status`, the servicer) and to HTTP (`http_status`, UFM REST) here and nowhere else.
"""

from __future__ import annotations

from typing import ClassVar, Literal

import grpc

ErrorCode = Literal["NOT_FOUND", "INVALID_ARGUMENT", "FAILED_PRECONDITION", "ALREADY_EXISTS",
                    "RESOURCE_EXHAUSTED", "UNAVAILABLE"]

HTTP_STATUS: dict[str, int] = {"NOT_FOUND": 404, "INVALID_ARGUMENT": 400, "FAILED_PRECONDITION": 400,
                               "ALREADY_EXISTS": 409, "RESOURCE_EXHAUSTED": 503, "UNAVAILABLE": 503}


class FabricError(Exception):
    """A refused request. `what` (a class attribute) prefixes the message on the wire: "SHARP", ..."""

    code: ErrorCode = "INVALID_ARGUMENT"
    what: ClassVar[str] = ""

    def __init__(self, message: str, code: ErrorCode | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code

    @property
    def detail(self) -> str:
        """The message as a client sees it."""
        return f"{self.what}: {self.message}" if self.what else self.message

    @property
    def grpc_status(self) -> grpc.StatusCode:
        return grpc.StatusCode[self.code]

    @property
    def http_status(self) -> int:
        return HTTP_STATUS[self.code]


class FabricNotFound(FabricError):
    """An unknown system, port, endpoint, partition or alarm."""

    code: ErrorCode = "NOT_FOUND"


class FabricInvalid(FabricError):
    """A request that cannot be carried out as asked (a bad argument; `code` FAILED_PRECONDITION
    when the fabric's state is what stands in the way, as with no route)."""
