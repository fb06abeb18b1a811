"""Errors every client of the twin shares."""

from __future__ import annotations

import grpc


class TwinRpcError(Exception):
    """A daemon answered a call with an error: which daemon, the gRPC status code, its message."""

    def __init__(self, target: str, code: grpc.StatusCode, details: str) -> None:
        super().__init__(f"{target}: {code.name}: {details}")
        self.target, self.code, self.details = target, code, details
