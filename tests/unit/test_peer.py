"""emulator/peer.py: the uid at the other end of a local connection, over a Unix socket
(SO_PEERCRED) and over loopback TCP (the client socket's owner in /proc/net/tcp), as another user's
process too."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from emulator.peer import peer_uid


def test_a_unix_peer_is_this_process_user() -> None:
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with a, b:
        assert peer_uid(b) == os.geteuid()


def test_a_loopback_tcp_peer_is_found_by_its_socket() -> None:
    with socket.create_server(("127.0.0.1", 0)) as srv:
        c = socket.create_connection(srv.getsockname())
        s, _ = srv.accept()
        with c, s:
            assert peer_uid(s) == os.geteuid()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run a client as another user")
def test_another_users_client_is_that_user() -> None:
    with socket.create_server(("127.0.0.1", 0)) as srv:
        code = f"import socket; c = socket.create_connection(('127.0.0.1', {srv.getsockname()[1]})); c.recv(1)"
        nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        p = subprocess.Popen([*nobody, sys.executable, "-c", code])
        try:
            s, _ = srv.accept()
            with s:
                assert peer_uid(s) == 65534
                s.send(b"x")
        finally:
            p.wait(timeout=10)
