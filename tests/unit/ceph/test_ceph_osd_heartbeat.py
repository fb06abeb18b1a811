"""An OSD's heartbeats reach the monitor in the order it sends them: a plain beat still in flight when
the OSD is stopped is answered before the stopping beat goes out. The other order marked a stopped OSD
up again (the monitor takes a ping after a mark-down as a boot), which CI saw as an EC PG with three
stopped OSDs serving reads. A real OsdDaemon over a real grpc.aio channel to a CephMon server on
loopback that holds the first plain beat, as a busy monitor's loop would."""

from __future__ import annotations

import asyncio
from pathlib import Path

import grpc

from clustertwin.v1 import ceph_pb2 as pb
from clustertwin.v1 import ceph_pb2_grpc as pb_grpc
from emulator.daemon_config import DaemonConfig
from services.ceph.osd.daemon import OsdDaemon

HELD_S = 0.3


class SlowMon(pb_grpc.CephMonServicer):
    """Answers heartbeats, the first plain one after `HELD_S`; notes the order they are taken in."""

    def __init__(self) -> None:
        self.taken: list[str] = []
        self.arrived = asyncio.Event()

    async def Heartbeat(self, request, context):  # noqa: ANN001, ANN201, N802
        kind = "stopping" if request.stopping else "plain"
        if kind == "plain" and not self.taken and not self.arrived.is_set():
            self.arrived.set()
            await asyncio.sleep(HELD_S)
        self.taken.append(kind)
        return pb.CephMonHeartbeatResponse(up=True, epoch=1)


def osd(tmp: Path, mon: str) -> OsdDaemon:
    cfg = DaemonConfig(name="osd.3", kind="ceph_osd", twin="t", grpc="127.0.0.1:0", metrics=None,
                       store_url=f"sqlite:///{tmp / 'osd.db'}", broker_host="127.0.0.1", broker_port=1,
                       spec={"osd": 3, "host": "ceph03", "data_dir": str(tmp / "data"), "mon": mon})
    return OsdDaemon(cfg)


def test_a_stop_during_a_heartbeat_reaches_the_monitor_after_it(tmp_path: Path) -> None:
    async def main() -> list[str]:
        mon = SlowMon()
        server = grpc.aio.server()
        pb_grpc.add_CephMonServicer_to_server(mon, server)
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        d = osd(tmp_path, f"127.0.0.1:{port}")
        try:
            async with grpc.aio.insecure_channel(d.mon) as channel:
                d.mon_stub = pb_grpc.CephMonStub(channel)
                loop = asyncio.create_task(d.heartbeat_loop())   # its first beat goes out at once
                await asyncio.wait_for(mon.arrived.wait(), 10)
                await d.stop_osd()                                # while that beat is held
                await asyncio.sleep(HELD_S)                      # the loop's next turn: it sends nothing
                loop.cancel()
        finally:
            await server.stop(None)
            d.state.close()
        return mon.taken

    assert asyncio.run(main()) == ["plain", "stopping"]
