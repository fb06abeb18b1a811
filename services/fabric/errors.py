"""The fabric manager's errors: `DaemonError`s (emulator/errors.py), so their code is a gRPC status
name chosen where the error is raised, never read from the message, and maps to gRPC (the servicer)
and to HTTP (UFM REST) there and nowhere else. Each names what was asked for and why it cannot be
done, and is raised before anything changes (a subnet step that failed is rolled back first)."""

from __future__ import annotations

from emulator.errors import DaemonError


class FabricError(DaemonError):
    """A refused request. `what` (a class attribute) prefixes the message on the wire: "SHARP", ..."""

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(code, message)

    def __str__(self) -> str:   # the message alone: it is quoted inside other messages and logs
        return self.message


class FabricNotFound(FabricError):
    """An unknown system, port, endpoint, partition or alarm."""

    code = "NOT_FOUND"


class FabricInvalid(FabricError):
    """A request that cannot be carried out as asked (a bad argument; `code` FAILED_PRECONDITION
    when the fabric's state is what stands in the way, as with no route)."""
