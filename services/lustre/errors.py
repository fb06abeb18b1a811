"""The one error type of Lustre's servers and clients: a POSIX errno name and a message a person can act on.

Lustre reports failures to clients as negative errno values, and `lfs` prints them with strerror. Over
gRPC, here and nowhere else: a servicer aborts with `grpc_status` (the status code's class of failure),
`message` as the details, and the errno name as structured data, the trailing metadata entry
`lustre-errno` (`trailing_metadata`). A client reads the errno back from that entry (`errno_of`), never
from the text; a failure without it (the server unreachable, a deadline) is EIO, as an RPC that a Lustre
client gives up on. Raised before any mutation, so a refused request changes nothing.
"""

from __future__ import annotations

import errno as _errno
import os
from typing import Literal, get_args

import grpc

from emulator.errors import DaemonError

Errno = Literal[
    "ENOENT", "EEXIST", "ENOTDIR", "EISDIR", "ENOTEMPTY", "EACCES", "EINVAL", "ENOSPC",
    "EBUSY", "EIO", "ENODEV", "EPERM", "ENODATA", "EAGAIN", "ENAMETOOLONG", "EOPNOTSUPP", "ERANGE",
]
ERRNO_KEY = "lustre-errno"   # the trailing metadata entry that carries the errno name

_STATUS = {
    "ENOENT": grpc.StatusCode.NOT_FOUND,
    "EEXIST": grpc.StatusCode.ALREADY_EXISTS,
    "EACCES": grpc.StatusCode.PERMISSION_DENIED,
    "EPERM": grpc.StatusCode.PERMISSION_DENIED,
    "ENOSPC": grpc.StatusCode.RESOURCE_EXHAUSTED,
    "EIO": grpc.StatusCode.UNAVAILABLE,
    "ENODEV": grpc.StatusCode.UNAVAILABLE,    # an OSS that does not serve the OST (now): try its partner
    "EAGAIN": grpc.StatusCode.UNAVAILABLE,    # the standby MDS: try the other one
    "EINVAL": grpc.StatusCode.INVALID_ARGUMENT,
    "ENAMETOOLONG": grpc.StatusCode.INVALID_ARGUMENT,
    "ERANGE": grpc.StatusCode.INVALID_ARGUMENT,
    "EOPNOTSUPP": grpc.StatusCode.UNIMPLEMENTED,   # an xattr namespace the MDS does not keep
}


class LustreError(DaemonError):
    """A refused request: `name` is the errno name (e.g. "ENOENT"), `errno` its number. Its gRPC status
    is the errno's class of failure (above); the mapping to gRPC and HTTP is emulator.errors.DaemonError's."""

    def __init__(self, name: Errno, message: str) -> None:
        if name not in get_args(Errno):
            raise ValueError(f"{name!r} is not an errno Lustre's servers return")
        super().__init__(_STATUS.get(name, grpc.StatusCode.FAILED_PRECONDITION).name, message, **{ERRNO_KEY: name})
        self.args = (f"{name}: {message}",)
        self.name: Errno = name

    @property
    def errno(self) -> int:
        return int(getattr(_errno, self.name))

    @property
    def strerror(self) -> str:
        """The C library's text for the errno, as `lfs` prints it (e.g. "No such file or directory")."""
        return os.strerror(self.errno)

    @property
    def trailing_metadata(self) -> tuple[tuple[str, str], ...]:
        return self.trailing()


def errno_of(e: grpc.RpcError) -> int:
    """The POSIX errno a failed call carries in its trailing metadata; EIO when it carries none."""
    trailers = e.trailing_metadata() if hasattr(e, "trailing_metadata") else None
    for key, value in trailers or ():
        if key == ERRNO_KEY and value in get_args(Errno):
            return int(getattr(_errno, value))
    return _errno.EIO
