"""The GPU-server daemon: one process per emulated HGX H100 server.

On the daemon skeleton (emulator/daemon.TwinDaemon), it wires the pure model to the outside: its
gRPC API (with health and reflection), a dcgm-exporter shaped Prometheus endpoint, the state store
(every acknowledged change is committed first), and the MQTT bus (events, faults, 1 Hz telemetry
per GPU).

    python -m services.gpu_node.daemon CONFIG.json      # normally forked by the supervisor
"""

from __future__ import annotations

import asyncio
import gc
import logging
from typing import Any

from clustertwin.v1 import gpu_node_pb2_grpc as pb_grpc
from emulator import bus
from emulator.daemon import TwinDaemon, main
from emulator.daemon_config import DaemonConfig, split_hostport
from emulator.http_endpoint import PROMETHEUS_TEXT, serve_app
from services.gpu_node import dcgm, nvml_control, nvml_endpoint, nvml_snapshot
from services.gpu_node.daemon_spec import GpuNodeSpec
from services.gpu_node.model import NodeModel
from services.gpu_node.servicer import GpuNodeServicer
from services.gpu_node.store import NodeStore
from services.gpu_node.telemetry import samples

log = logging.getLogger("gpu_node")

SERVICE_NAME = "clustertwin.v1.GpuNode"
CHECKPOINT_EVERY_S = 30.0   # counters (energy) are saved this often even when nothing else changes


def fault_record(node: str, f: dict[str, Any]) -> dict[str, Any]:
    """The model's fault (records.Fault) as the bus's fault record (emulator/events.py FaultPayload)."""
    params = {k: f[k] for k in ("xid", "link", "count", "lease_id") if f.get(k)}
    return {"id": f["id"], "subsystem": "gpu", "target": f"{node} GPU {f['gpu']}", "kind": f["kind"],
            "params": params, "active": f["active"], "injected_at": f["injected_at"],
            "cleared_at": None if f["active"] else f["cleared_at"], "effect": f["effect"]}


class GpuNodeDaemon(TwinDaemon):
    def __init__(self, cfg: DaemonConfig) -> None:
        super().__init__(cfg)
        self.spec = GpuNodeSpec.of(cfg).node()
        self.store = NodeStore(cfg.store_url, cfg.name)
        state = self.store.load()
        now = self.clock.now()
        self.first_boot = state is None
        self.model = NodeModel(self.spec, now) if state is None else NodeModel.from_state(self.spec, state, now)
        self.bus = bus.Publisher(cfg.broker_host, cfg.broker_port, cfg.twin, cfg.name)
        self.servicer = GpuNodeServicer(self.model, self.clock.now, self.persist)

    async def persist(self, events: list[dict[str, Any]]) -> None:
        """Commit the model's state before the change is acknowledged, then tell the bus."""
        self.store.save(self.model.to_state(), events)
        node = self.cfg.name
        for ev in events:
            payload = {k: v for k, v in ev.items() if k not in ("time", "kind", "message")}
            if ev.get("fault"):
                payload["fault"] = fault_record(node, ev["fault"])
            self.bus.event("gpu", ev["kind"], payload, time=ev["time"], message=ev["message"], node=node)
            if ev.get("fault"):
                self.bus.fault(node, payload["fault"])

    def metrics(self) -> tuple[str, str]:
        return PROMETHEUS_TEXT, dcgm.render(self.model)

    def nvml_page(self) -> tuple[str, str]:
        """What libnvidia-ml.so.1 reads (services/gpu_node/nvml_endpoint.py, docs/NVML.md)."""
        return nvml_endpoint.CONTENT_TYPE, nvml_snapshot.render(self.model)

    async def nvml_set(self, body: str) -> int | tuple[int, ...]:
        """One of NVML's set calls (nvml_control.py): its nvmlReturn_t (and a MIG call's values)."""
        return await nvml_control.apply(self.servicer, self.model, body)

    async def telemetry_loop(self) -> None:
        twin, node = self.cfg.twin, self.cfg.name
        since_checkpoint = 0.0
        while True:
            await asyncio.sleep(self.cfg.telemetry_interval)
            now = self.clock.now()
            self.model.tick(now)
            if self.model.has_pending_events:   # a tick rarely changes anything worth a write
                await self.servicer.commit()
            for sample in samples(self.model, now):
                self.bus.publish(bus.telemetry_topic(twin, node, sample["gpu"]), sample)
            since_checkpoint += self.cfg.telemetry_interval
            if since_checkpoint >= CHECKPOINT_EVERY_S:
                self.store.save(self.model.to_state(), [])
                since_checkpoint = 0.0

    async def start(self) -> None:
        if self.first_boot:
            await self.servicer.commit()   # the first boot's state (and its MIG layout) is durable
        await self.start_grpc([(pb_grpc.add_GpuNodeServicer_to_server, self.servicer, SERVICE_NAME)])
        if self.cfg.metrics:
            host, port = split_hostport(self.cfg.metrics)
            routes = {"/metrics": self.metrics, nvml_endpoint.PATH: self.nvml_page}
            self.serve_http(await serve_app(host, port, nvml_endpoint.handler(routes, self.nvml_set)))
        if self.cfg.netns:   # in its own host: the NVML library finds it with no settings
            self.serve_http(await nvml_endpoint.serve_abstract(lambda: self.nvml_page()[1], self.nvml_set))
        self.background(self.telemetry_loop(), "telemetry")
        # What start-up allocated lives as long as the daemon: keep the collector off it, so that
        # a full collection neither stalls a request nor touches (and so copies) shared pages.
        gc.freeze()
        log.info("%s serving gRPC on %s, metrics on %s (boot %s)", self.cfg.name, self.cfg.grpc, self.cfg.metrics,
                 "first" if self.first_boot else "restored from store")

    async def close(self) -> None:
        await self.servicer.close()
        self.store.save(self.model.to_state(), [])
        self.store.close()


run = GpuNodeDaemon.run


if __name__ == "__main__":
    main("services.gpu_node.daemon", run)
