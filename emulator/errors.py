"""Errors every part of the twin shares.

Two kinds of failure reach a user: one their input caused (a bad option, an unknown daemon, a request
a daemon refused), which the CLI prints as one line and exit status 2, and a bug, which must show
its traceback. `UserError` marks the first; the CLI catches nothing else.

A daemon refuses a request with a `DaemonError`: a gRPC status name chosen where it is raised (never
read back from the message), mapped to gRPC and to HTTP here and nowhere else.
"""

from __future__ import annotations

from typing import ClassVar, NoReturn

import grpc

# google.rpc.Code's HTTP mapping (googleapis/google/rpc/code.proto), as REST front ends of gRPC use it.
HTTP_STATUS: dict[str, int] = {
    "CANCELLED": 499, "UNKNOWN": 500, "INVALID_ARGUMENT": 400, "DEADLINE_EXCEEDED": 504, "NOT_FOUND": 404,
    "ALREADY_EXISTS": 409, "PERMISSION_DENIED": 403, "UNAUTHENTICATED": 401, "RESOURCE_EXHAUSTED": 429,
    "FAILED_PRECONDITION": 400, "ABORTED": 409, "OUT_OF_RANGE": 400, "UNIMPLEMENTED": 501, "INTERNAL": 500,
    "UNAVAILABLE": 503, "DATA_LOSS": 500,
}


class UserError(Exception):
    """A failure the user's input caused; its message says what to do. The CLI prints it as one line."""


class NotFound(UserError, KeyError):
    """An unknown name (a daemon, a service, a fault id). Still a KeyError for callers that catch one."""

    def __str__(self) -> str:   # KeyError's str() quotes its argument
        return str(self.args[0]) if self.args else ""


class BadInput(UserError, ValueError):
    """A value the twin cannot use (a malformed size, address or option). Still a ValueError."""


class DaemonError(UserError):
    """A daemon refused a request, before changing anything. `code` is a gRPC status name; `metadata`
    travels as the call's trailing metadata (e.g. Lustre's errno), so a client reads it without
    parsing the message."""

    code: str = "INVALID_ARGUMENT"
    what: ClassVar[str] = ""     # prefixes the message on the wire ("SHARP: ...")

    def __init__(self, code: str | None, message: str, **metadata: str) -> None:
        code = code or type(self).code
        if code not in HTTP_STATUS:
            raise ValueError(f"{code!r} is not a gRPC status name")
        super().__init__(f"{code}: {message}")
        self.code, self.message, self.metadata = code, message, metadata

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

    @classmethod
    def from_rpc(cls, e: grpc.RpcError, what: str = "", known: frozenset[str] | None = None) -> DaemonError:
        """A failed call as the error the daemon raised (`what: ` before its message). A status outside
        `known` (a deadline, the daemon gone) is UNAVAILABLE: the backend is away."""
        name = e.code().name  # type: ignore[attr-defined]
        details = e.details() or name  # type: ignore[attr-defined]
        trailing = {k: v for k, v in (e.trailing_metadata() or ()) if isinstance(v, str)}  # type: ignore[attr-defined]
        code = name if known is None or name in known else "UNAVAILABLE"
        err = cls.__new__(cls)
        DaemonError.__init__(err, code, f"{what}: {details}" if what else details, **trailing)
        return err

    def trailing(self) -> tuple[tuple[str, str], ...]:
        return tuple(self.metadata.items())

    async def abort(self, context: grpc.aio.ServicerContext) -> NoReturn:
        """End an asyncio call with this error (the one place servicers map an error to gRPC)."""
        if self.metadata:
            context.set_trailing_metadata(self.trailing())
        await context.abort(self.grpc_status, self.detail)
        raise AssertionError("unreachable")   # context.abort raises

    def abort_sync(self, context: grpc.ServicerContext) -> NoReturn:
        if self.metadata:
            context.set_trailing_metadata(self.trailing())
        context.abort(self.grpc_status, self.detail)
        raise AssertionError("unreachable")


class TwinRpcError(UserError):
    """A daemon answered a call with an error: which daemon, the gRPC status code, its message."""

    def __init__(self, target: str, code: grpc.StatusCode, details: str) -> None:
        super().__init__(f"{target}: {code.name}: {details}")
        self.target, self.code, self.details = target, code, details
