"""A chunk's bytes where they lie in a file, for a sender that moves them with sendfile(2): the kernel
hands the page cache's pages to the socket, with no read into a buffer and no copy out of it (a
BlueStore read lands in a bufferlist the messenger sends from; the twin's OSD has no such buffer to
spare the copies).

The extent owns a duplicate of the file's descriptor, so the store may close or compact the file
meanwhile (its log segments are only appended to: the bytes at an offset do not change).
"""

from __future__ import annotations

import os


class FileExtent:
    mode = "rb"   # (asyncio's sendfile asks for a binary file)

    def __init__(self, fd: int, offset: int, length: int) -> None:
        """`fd`: the extent's own descriptor, closed by `close`."""
        self.fd, self.offset, self.length = fd, offset, length

    def __len__(self) -> int:
        return self.length

    def fileno(self) -> int:
        return self.fd

    def seek(self, offset: int, whence: int = 0) -> int:
        """(asyncio's sendfile moves the file past what it sent: the extent reads by offset, not position)"""
        return offset

    def read(self) -> bytes:
        """The bytes, for a sender that needs them in memory (gRPC); the extent is closed after."""
        try:
            return os.pread(self.fd, self.length, self.offset)
        finally:
            self.close()

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __del__(self) -> None:   # a reply dropped unsent (its connection gone) still frees its descriptor
        self.close()
