"""The event bus: MQTT topics and payloads, and the daemons' publisher.

Topic scheme (PREFIX = `clustertwin/<twin name>`), payloads JSON:

    PREFIX/telemetry/<node>/gpu/<index>   QoS 0, every telemetry interval (1 s by default):
        {"time", "node", "gpu", "uuid", "power_w", "temperature_c", "memory_temperature_c",
         "gpu_util", "mem_copy_util", "sm_clock_mhz", "mem_clock_mhz", "memory_used_mib",
         "memory_free_mib", "total_energy_mj", "health", "last_xid", "throttle_reasons"}
    PREFIX/events/<node>/<kind>           QoS 1: one event as the gRPC Event message has it
        {"seq", "time", "node", "kind", "gpu", "xid", "lease_id", "health", "message"}
        kinds: xid, health, lease_start, lease_end, mig, fault, fault_clear, gpu_reset,
               node_reboot, gpu_lost
    PREFIX/faults/<node>/<fault id>       QoS 1, retained while the fault is active: the fault
        {"id", "kind", "gpu", "xid", "link", "count", "lease_id", "injected_at", "active",
         "cleared_at", "effect"}; cleared faults are published once with active=false and
         their retained message is then removed.
    PREFIX/events/network/<kind>          QoS 1: network faults (netns backend) from `twin net fault`
        {"time", "node": "network", "kind", "fault", "message"}; kinds link-down, loss,
        switch-down, node-cut, partition, and each with "-clear" when it is cleared; the fault is
        retained on PREFIX/faults/network/<id> while active.
    PREFIX/events/ceph/<kind>             QoS 1: the Ceph monitor (`twin up --ceph`): kinds osd_up,
        osd_down, osd_in, osd_out {"time", "node": "ceph", "kind", "osd", "host", "epoch", "message"};
        pg_state {"pg", "from", "to", ...} on every PG state change; fault and fault_clear for the OSD
        faults of `twin fault inject|clear osd.N` {"osd", "fault", "message"}, the fault retained on
        PREFIX/faults/ceph/<id> while active ({"id", "kind", "osd", "factor", "pool", "object",
        "injected_at", "active", "cleared_at", "effect"}).
    PREFIX/events/lustre/<kind>           QoS 1: the Lustre servers (`twin up --lustre`, services/lustre/
        events.py) {"time", "node" (the MDS or OSS that saw it), "kind", "message", ...}: kinds
        oss_down, oss_up {"oss"}; oss_failover, oss_failback {"ost", "from", "to"}; ost_inactive
        {"ost"}, ost_active {"ost", "oss"}; ost_full, ost_full_clear {"ost"}; mds_failover {"mdt",
        "to", "from"}. `twin lustre fault` oss-kill/oss-start/ost-full/ost-clear/mds-kill each
        show as one of them (oss_down, oss_up, ost_full, ost_full_clear, mds_failover).
    PREFIX/train/<job id>/<kind>          a training workload (`twin train`, workloads/train): kinds
        start, progress (QoS 0, each step), checkpoint, failed, completed; every time in them is
        modelled ("modelled": true), never measured.
    PREFIX/status/<node>                  QoS 1, retained: "online", or "offline" (also the
        daemon's MQTT last will, so a crashed daemon reads "offline").
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from dataclasses import dataclass
from typing import Any

import aiomqtt

log = logging.getLogger(__name__)

TOPIC_ROOT = "clustertwin"


def prefix(twin: str) -> str:
    return f"{TOPIC_ROOT}/{twin}"


def telemetry_topic(twin: str, node: str, gpu: int) -> str:
    return f"{prefix(twin)}/telemetry/{node}/gpu/{gpu}"


def event_topic(twin: str, node: str, kind: str) -> str:
    return f"{prefix(twin)}/events/{node}/{kind}"


def fault_topic(twin: str, node: str, fault_id: str) -> str:
    return f"{prefix(twin)}/faults/{node}/{fault_id}"


def train_topic(twin: str, job_id: str, kind: str) -> str:
    return f"{prefix(twin)}/train/{job_id}/{kind}"


def status_topic(twin: str, node: str) -> str:
    return f"{prefix(twin)}/status/{node}"


def encode(payload: Any) -> bytes:
    if isinstance(payload, bytes):
        return payload
    if isinstance(payload, str):
        return payload.encode()
    return json.dumps(payload, separators=(",", ":")).encode()


@dataclass(frozen=True)
class Message:
    topic: str
    payload: bytes
    qos: int = 0
    retain: bool = False


class Publisher:
    """Publishes from a bounded queue so that a slow or absent broker never blocks a daemon.

    When the queue is full the oldest message is dropped: telemetry is periodic and events are
    also in the daemon's store and its gRPC event stream, which are the durable record.
    """

    def __init__(self, host: str, port: int, client_id: str, status_topic: str, maxsize: int = 4096) -> None:
        self.host, self.port, self.client_id = host, port, client_id
        self.status_topic = status_topic
        self.queue: asyncio.Queue[Message] = asyncio.Queue(maxsize=maxsize)
        self.connected = asyncio.Event()
        self.dropped = 0

    def publish(self, topic: str, payload: Any, qos: int = 0, retain: bool = False) -> None:
        msg = Message(topic, encode(payload), qos, retain)
        while True:
            try:
                self.queue.put_nowait(msg)
                return
            except asyncio.QueueFull:
                self.queue.get_nowait()
                self.dropped += 1

    async def run(self) -> None:
        will = aiomqtt.Will(self.status_topic, b"offline", qos=1, retain=True)
        backoff = 0.2
        while True:
            try:
                async with aiomqtt.Client(self.host, self.port, identifier=self.client_id, will=will,
                                          keepalive=30) as client:
                    await client.publish(self.status_topic, b"online", qos=1, retain=True)
                    self.connected.set()
                    backoff = 0.2
                    while True:
                        msg = await self.queue.get()
                        await client.publish(msg.topic, msg.payload, qos=msg.qos, retain=msg.retain)
            except aiomqtt.MqttError as e:
                self.connected.clear()
                log.warning("MQTT broker %s:%s unavailable (%s); retrying in %.1fs", self.host, self.port, e, backoff)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 5.0)

    async def close(self, timeout: float = 1.0) -> None:
        """Publish a clean offline status and give queued messages a moment to leave."""
        self.publish(self.status_topic, b"offline", qos=1, retain=True)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                while not self.queue.empty() and self.connected.is_set():
                    await asyncio.sleep(0.01)
