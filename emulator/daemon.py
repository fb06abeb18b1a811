"""The skeleton every twin daemon runs on (issue 14): its gRPC server(s) on grpc.aio with health and
reflection (emulator/grpc_server.py), the twin clock, the bus publisher, its background tasks, the
worker threads its blocking calls run in, the stop on SIGTERM or SIGINT, and its command line
(`python -m services.<x>.daemon CONFIG.json`, as the supervisor forks it)."""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
from collections.abc import Callable, Coroutine, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2

from emulator import bus
from emulator.daemon_config import DaemonConfig
from emulator.grpc_server import Registration, start_server
from emulator.service import typed

log = logging.getLogger("daemon")

GRACE_S = 1.0          # calls in flight when the daemon stops get this long to finish
BUS_FLUSH_S = 0.5      # and the bus's queue this long to leave


def stop_event() -> asyncio.Event:
    """An event the running loop sets on SIGTERM or SIGINT: the daemon's cue to stop."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    return stop


class TwinDaemon:
    """A daemon on the skeleton gives `start()`: its gRPC services (`start_grpc`) and background work
    (`background`); and `close()`: what it saves and closes once all else has stopped. `serve()` runs
    it until SIGTERM or SIGINT, then stops in one order: health NOT_SERVING and the servers (GRACE_S for
    calls in flight) with its HTTP servers (`serve_http`), the background tasks, the bus (its queue given
    BUS_FLUSH_S), then `close()`.

    A daemon that publishes on the bus from its event loop sets `self.bus` (a bus.Publisher) in its
    __init__; `worker_threads` sizes the executor its blocking calls (asyncio.to_thread) run in. If
    `start()` fails, what it started is stopped the same way (and `close()` called) before the error
    leaves; a long `start()` may look at `self.stopping` to give up early."""

    worker_threads = 0          # 0: asyncio's default executor
    thread_name = "worker"

    def __init__(self, cfg: DaemonConfig) -> None:
        self.cfg = cfg
        self.clock = cfg.clock
        self.bus: bus.Publisher | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self._servers: list[tuple[grpc.aio.Server, Any]] = []   # (server, its health servicer)
        self._services: list[str] = []
        self._tasks: list[asyncio.Task] = []
        self._http: list[asyncio.Server] = []
        self.stopping: asyncio.Event | None = None   # set on SIGTERM or SIGINT (once serve() runs)

    @classmethod
    def run(cls, cfg: DaemonConfig) -> None:
        """The daemon kind's entry point (the "module:run" its service names; the supervisor forks and calls it)."""
        asyncio.run(cls(cfg).serve())

    async def start(self) -> None:
        raise NotImplementedError

    async def close(self) -> None:
        """After the servers, the background tasks and the bus have stopped."""

    async def start_grpc(self, services: Sequence[Registration], *, addresses: Sequence[str] = (),
                         options: Sequence[tuple[str, Any]] = (), serving: bool = True) -> None:
        """Serve `services` on the daemon's `grpc` address and on each of `addresses` (one server each, the
        same servicers). `serving=False`: the services' health says NOT_SERVING (the process's own, "",
        SERVING) until `set_serving(True)`."""
        for address in [self.cfg.grpc, *addresses]:
            self._servers.append(await start_server(address, services, options))
        self._services += [name for _, _, name in services]
        if not serving:
            await self.set_serving(False)

    async def set_serving(self, yes: bool) -> None:
        """Every service's health on every server: SERVING or NOT_SERVING."""
        status = health_pb2.HealthCheckResponse.SERVING if yes else health_pb2.HealthCheckResponse.NOT_SERVING
        for _, health in self._servers:
            for name in self._services:
                await health.set(name, status)

    def serve_http(self, server: asyncio.Server) -> asyncio.Server:
        """An HTTP server the daemon started (metrics, REST): closed with the gRPC servers."""
        self._http.append(server)
        return server

    def background(self, work: Coroutine[Any, Any, Any], name: str) -> asyncio.Task:
        """A task that runs until the daemon stops (cancelled after the servers stopped)."""
        task = asyncio.create_task(work, name=name)
        self._tasks.append(task)
        return task

    async def serve(self) -> None:
        stop = self.stopping = stop_event()
        self.loop = asyncio.get_running_loop()
        if self.worker_threads:
            self.loop.set_default_executor(ThreadPoolExecutor(self.worker_threads, thread_name_prefix=self.thread_name))
        bus_task = None if self.bus is None else asyncio.create_task(self.bus.run(), name="bus")
        try:
            await self.start()
            await stop.wait()
            log.info("%s stopping", self.cfg.name)
        finally:
            await self._stop(bus_task)

    async def _stop(self, bus_task: asyncio.Task | None) -> None:
        for _, health in self._servers:
            await health.enter_graceful_shutdown()
        await asyncio.gather(*(server.stop(grace=GRACE_S) for server, _ in self._servers))
        for http in self._http:
            http.close()
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self.bus is not None and bus_task is not None:
            await self.bus.close(timeout=BUS_FLUSH_S)
            bus_task.cancel()   # a cancelled MQTT client may wait for the broker's answer: not long
            await asyncio.wait([bus_task], timeout=BUS_FLUSH_S)
        await self.close()


def main(module: str, run: Callable[[DaemonConfig], None]) -> None:
    """A daemon module's `__main__`: `run` its config file, logging to stderr (the supervisor's log)."""
    if len(sys.argv) != 2:
        sys.exit(f"usage: python -m {module} CONFIG.json")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    run(typed(DaemonConfig.from_file(Path(sys.argv[1]))))   # its spec parsed by its kind's model
