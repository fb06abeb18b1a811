"""A Unix socket whose path is longer than sun_path (a run directory under a deep checkout) binds and
connects through its directory's descriptor."""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import pytest

from emulator import unix_socket


@pytest.mark.parametrize("depth", [0, 12])
def test_bind_and_connect_at_any_length(tmp_path: Path, depth: int) -> None:
    d = tmp_path.joinpath(*["a-rather-long-directory-name"] * depth)
    d.mkdir(parents=True, exist_ok=True)
    path = d / "lustre-0123456789ab.sock"
    if depth:
        assert len(str(path)) > unix_socket.SUN_PATH_MAX
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as srv:
        unix_socket.bind(srv, path)
        srv.listen(1)
        assert path.is_socket()               # the socket is where the long path says

        def answer() -> None:
            conn, _ = srv.accept()
            with conn:
                conn.sendall(conn.recv(16).upper())

        t = threading.Thread(target=answer)
        t.start()
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as c:
            unix_socket.connect(c, path)
            c.sendall(b"ping")
            assert c.recv(16) == b"PING"
        t.join()
