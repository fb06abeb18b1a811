"""The daemon skeleton (emulator/daemon.TwinDaemon) stops what a daemon started, in its one order, also
when the daemon's start() fails half-way (the fabric's OpenSM not coming up) or the stop comes while
it starts: its gRPC server and HTTP server close their ports, its background task is cancelled and
its close() runs. A real grpc.aio server and a real HTTP server on loopback ports."""

from __future__ import annotations

import asyncio
import socket

import pytest

from clustertwin.v1 import fabric_pb2_grpc as pb_grpc
from emulator.daemon import TwinDaemon
from emulator.daemon_config import DaemonConfig
from emulator.http_endpoint import serve


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


class Probe(TwinDaemon):
    """Starts a gRPC server, an HTTP server and a background task, then fails or stops."""

    def __init__(self, fail: bool) -> None:
        self.grpc_port, self.http_port = free_port(), free_port()
        super().__init__(DaemonConfig(name="probe", kind="probe", twin="t", spec={}, grpc=f"127.0.0.1:{self.grpc_port}",
                                      metrics=None, store_url="sqlite://", broker_host="127.0.0.1", broker_port=1))
        self.fail = fail
        self.seen: dict[str, bool] = {}
        self.task: asyncio.Task | None = None

    async def start(self) -> None:
        fabric = (pb_grpc.add_FabricServicer_to_server, pb_grpc.FabricServicer(), "clustertwin.v1.Fabric")
        await self.start_grpc([fabric])
        self.serve_http(await serve("127.0.0.1", self.http_port, {"/metrics": lambda: ("text/plain", "")}))
        self.task = self.background(asyncio.sleep(3600), "idle")
        self.seen["listening"] = listening(self.grpc_port) and listening(self.http_port)
        if self.fail:
            raise RuntimeError("the subnet manager did not come up")
        assert self.stopping is not None
        self.stopping.set()   # what SIGTERM does

    async def close(self) -> None:
        assert self.task is not None
        self.seen["closed"] = True
        self.seen["task cancelled"] = self.task.cancelled()
        self.seen["ports closed"] = not listening(self.grpc_port) and not listening(self.http_port)


@pytest.mark.parametrize("fail", [True, False], ids=["start fails", "stopped while starting"])
def test_the_skeleton_stops_what_the_daemon_started(fail: bool) -> None:
    d = Probe(fail)
    if fail:
        with pytest.raises(RuntimeError, match="did not come up"):
            asyncio.run(d.serve())
    else:
        asyncio.run(d.serve())
    assert d.seen == {"listening": True, "closed": True, "task cancelled": True, "ports closed": True}
