"""The floor under any S3 server's big-object figures on this machine: an HTTP server that only
moves bytes. It keeps each PUT body in memory without hashing, checking or storing it anywhere,
and answers a GET with `sendall` of what it kept, with the `x-amz-checksum-crc32` the PUT declared
(unchecked) so that the client validates the body as it does for RGW and moto; any other request
gets an empty 200. It is not S3 (no signatures, no ETag but a constant, no errors): it measures
what the boto3 client and the loopback socket cost by themselves, so that a ratio between two real
servers can be read against the best ratio any server could show over the same client.

    python -m bench.s3_floor --port P
"""

from __future__ import annotations

import argparse
import socket
import threading

_ETAG = '"00000000000000000000000000000000"'


def _serve(conn: socket.socket, objects: dict[bytes, tuple[bytes, bytes]]) -> None:
    f = conn.makefile("rb")
    with conn, f:
        while True:
            line = f.readline()
            if not line:
                return
            method, target = line.split()[:2]
            length, expect, crc = 0, False, b""
            while (h := f.readline()) not in (b"\r\n", b""):
                name, _, value = h.partition(b":")
                name = name.strip().lower()
                if name == b"content-length":
                    length = int(value)
                elif name == b"expect":
                    expect = True
                elif name == b"x-amz-checksum-crc32":
                    crc = value.strip()
            if expect:
                conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
            body = f.read(length) if length else b""
            path = target.split(b"?")[0]
            if method == b"PUT" and length:
                objects[path] = (body, crc)
            data, crc = objects.get(path, (b"", b"")) if method == b"GET" else (b"", b"")
            extra = b"x-amz-checksum-crc32: %s\r\n" % crc if crc else b""
            conn.sendall(b"HTTP/1.1 200 OK\r\nETag: %s\r\n%sContent-Length: %d\r\n\r\n" % (_ETAG.encode(), extra,
                                                                                        len(data)))
            if data:
                conn.sendall(data)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--port", type=int, required=True)
    args = ap.parse_args()
    objects: dict[bytes, tuple[bytes, bytes]] = {}
    with socket.create_server(("127.0.0.1", args.port), reuse_port=False) as srv:
        while True:
            conn, _ = srv.accept()
            threading.Thread(target=_serve, args=(conn, objects), daemon=True).start()


if __name__ == "__main__":
    main()
