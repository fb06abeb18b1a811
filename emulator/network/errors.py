"""The one error this package raises for anything a caller or user can cause."""

from __future__ import annotations

from emulator.errors import UserError


class NetworkError(UserError):
    """Bad input (unknown host or link, a prefix already in use) or a kernel step that failed."""
