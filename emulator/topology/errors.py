"""Errors a user can act on: each names the file, the line, the field and the problem."""

from __future__ import annotations

from dataclasses import dataclass

from emulator.errors import UserError

Loc = tuple[str | int, ...]


@dataclass(frozen=True)
class Problem:
    loc: Loc  # field path inside the file, e.g. ("compute", "leaf_radix")
    message: str

    @property
    def path(self) -> str:
        """`compute.leaf_radix`, `management_nodes[2].name`."""
        out = ""
        for part in self.loc:
            out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
        return out


class TopologyError(UserError, ValueError):
    """A topology that cannot be loaded. `str()` is one line per problem, each self-contained:
    `topologies/bad.yaml:14: compute.leaf_radix: must be even, got 63`."""

    def __init__(self, message: str, lines: list[str] | None = None) -> None:
        super().__init__(message)
        self.lines = lines or [message]


class TopologyNotFound(TopologyError):
    """No file by that name or path (a usage error, not an invalid file)."""
