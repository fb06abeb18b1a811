"""The one error type the Lustre models raise: a POSIX errno name and a message a person can act on.

Lustre reports failures to clients as negative errno values, and `lfs` prints them with strerror;
the coming FUSE client raises `OSError(err.errno, ...)` and the gRPC servicers map names to status
codes. Raised before any mutation, so a refused request changes nothing.
"""

from __future__ import annotations

import errno as _errno
import os
from typing import Literal

Errno = Literal[
    "ENOENT", "EEXIST", "ENOTDIR", "EISDIR", "ENOTEMPTY", "EACCES", "EINVAL", "ENOSPC",
    "EBUSY", "EIO", "ENODEV", "EPERM",
]


class LustreError(Exception):
    """A refused request: `name` is the errno name (e.g. "ENOENT"), `errno` its number."""

    def __init__(self, name: Errno, message: str) -> None:
        super().__init__(f"{name}: {message}")
        self.name: Errno = name
        self.message = message

    @property
    def errno(self) -> int:
        return int(getattr(_errno, self.name))

    @property
    def strerror(self) -> str:
        """The C library's text for the errno, as `lfs` prints it (e.g. "No such file or directory")."""
        return os.strerror(self.errno)

