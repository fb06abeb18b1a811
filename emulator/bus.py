"""The event bus: MQTT topics, the one way to publish on them, and the event log the test suite checks.

Topics (PREFIX = `clustertwin/<twin name>`), events and fault records as docs/EVENTS.md describes
them (rendered from emulator/events.py, the schema):

    PREFIX/events/<node>/<kind>           QoS 1: one event (the envelope beside its kind's payload)
    PREFIX/faults/<node>/<fault id>       QoS 1, retained while the fault is active: its record
    PREFIX/train/<job id>/<kind>          a training job's events (QoS 0 for `progress`)
    PREFIX/telemetry/<node>/gpu/<index>   QoS 0, every telemetry interval: one GPU's sample
    PREFIX/status/<node>                  QoS 1, retained: "online", or "offline" (also the last will)

Publishers: `Publisher` (aiomqtt, for the asyncio daemons: a bounded queue, never blocks) and
`SyncPublisher` (paho's own network thread, for synchronous callers: Lustre's daemons, `twin net
fault`, training jobs). Both build events with `event()` (the envelope is made in
emulator/events.py, here only) and fault records with `fault()`. `Subscription` reads the bus.

When CLUSTERTWIN_EVENT_LOG names a file, every event and fault record published (and the first
telemetry sample of each GPU) is also appended to it as one JSON line ({"pid", "topic", "retain",
"doc"}); the test suite sets it and checks the file against the schema at its end (tests/event_log.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Self

import aiomqtt

from emulator import events

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


EVENT_LOG_ENV = "CLUSTERTWIN_EVENT_LOG"
LOGGED = ("events", "faults", "train", "telemetry")   # the topic kinds that carry documents of the schema
_telemetry_logged: set[str] = set()   # telemetry is periodic: its first sample per topic is enough


def log_message(topic: str, data: bytes, retain: bool) -> None:
    """Append what was published to $CLUSTERTWIN_EVENT_LOG (if set): one line, one write(), so that
    the lines of concurrent daemons do not interleave."""
    path = os.environ.get(EVENT_LOG_ENV)
    parts = topic.split("/", 3)
    if not path or not data or len(parts) < 3 or parts[2] not in LOGGED:
        return
    if parts[2] == "telemetry":
        if topic in _telemetry_logged:
            return
        _telemetry_logged.add(topic)
    try:
        doc = json.loads(data)
    except ValueError:
        doc = data.decode(errors="replace")   # logged as it is: the check names it
    line = json.dumps({"pid": os.getpid(), "topic": topic, "retain": retain, "doc": doc},
                      separators=(",", ":")) + "\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


class ClosedOnExit:
    """A paho client's owner that a `with` block closes (`close()`) on leaving it."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


class BusClient:
    """What every publisher shares: the envelope of its events, fault records, the event log."""

    def __init__(self, twin: str, source: str) -> None:
        self.twin, self.source = twin, source

    def send(self, topic: str, data: bytes, qos: int, retain: bool) -> None:
        raise NotImplementedError

    def publish(self, topic: str, payload: Any, qos: int = 0, retain: bool = False) -> None:
        data = encode(payload)
        log_message(topic, data, retain)
        self.send(topic, data, qos, retain)

    def event(self, subsystem: str, kind: str, payload: dict[str, Any], *, time: float, message: str = "",
              node: str | None = None, topic: str | None = None, qos: int = 1) -> dict[str, Any]:
        """Publish one event on `events/<node>/<kind>` (node: the subsystem unless given) or `topic`."""
        doc = events.envelope(self.twin, subsystem, self.source, kind, payload, time=time, message=message)
        self.publish(topic or event_topic(self.twin, node or subsystem, kind), doc, qos=qos)
        return doc

    def fault(self, node: str, record: dict[str, Any]) -> None:
        """A fault record on `faults/<node>/<id>`: retained while active; once cleared, sent once and
        its retained copy removed (an empty retained message)."""
        topic = fault_topic(self.twin, node, record["id"])
        self.publish(topic, record, qos=1, retain=bool(record["active"]))
        if not record["active"]:
            self.publish(topic, b"", qos=1, retain=True)


@dataclass(frozen=True)
class Message:
    topic: str
    payload: bytes
    qos: int = 0
    retain: bool = False


class Publisher(BusClient):
    """The asyncio daemons' publisher (aiomqtt): publishes from a bounded queue so that a slow or
    absent broker never blocks a daemon; its status topic says online/offline (the last will).

    When the queue is full the oldest message is dropped: telemetry is periodic and events are
    also in the daemon's store and its gRPC event stream, which are the durable record.
    """

    def __init__(self, host: str, port: int, twin: str, source: str, maxsize: int = 4096) -> None:
        super().__init__(twin, source)
        self.host, self.port, self.client_id = host, port, f"{twin}/{source}"
        self.status_topic = status_topic(twin, source)
        self.queue: asyncio.Queue[Message] = asyncio.Queue(maxsize=maxsize)
        self.connected = asyncio.Event()
        self.dropped = 0

    def send(self, topic: str, data: bytes, qos: int = 0, retain: bool = False) -> None:
        msg = Message(topic, data, qos, retain)
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


class SyncPublisher(BusClient, ClosedOnExit):
    """The synchronous callers' publisher: paho on its own network thread.

    `wait=False` (a daemon): connect in the background and reconnect, best effort: without a broker
    nothing is sent. `wait=True` (a command): connect now (OSError when the broker cannot be reached),
    and `flush()` waits for the broker's PUBACKs.
    """

    def __init__(self, host: str, port: int, twin: str, source: str, *, wait: bool = False,
                 client_id: str | None = None) -> None:
        import paho.mqtt.client as mqtt

        super().__init__(twin, source)
        self.host, self.port = host, int(port)
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id or "")
        self.lock = threading.Lock()
        self.pending: list[Any] = []
        if wait:
            self.client.connect(host, self.port, keepalive=10)
        else:
            self.client.connect_async(host, self.port)
        self.client.loop_start()

    def send(self, topic: str, data: bytes, qos: int = 0, retain: bool = False) -> None:
        with self.lock:
            info = self.client.publish(topic, data, qos=qos, retain=retain)
            if qos:
                self.pending = [*self.pending[-255:], info]

    def flush(self, timeout: float = 5.0) -> None:
        """Wait until the broker has acknowledged every QoS 1 message; TimeoutError if it has not."""
        deadline = time.monotonic() + timeout
        with self.lock:
            pending, self.pending = self.pending, []
        for info in pending:
            info.wait_for_publish(max(0.01, deadline - time.monotonic()))
            if not info.is_published():
                raise TimeoutError(f"MQTT broker {self.host}:{self.port} did not acknowledge within {timeout:g}s")

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


def publish_fault(broker: dict[str, Any], twin: str, record: dict[str, Any], *, now: float, message: str,
                  source: str = "twin", subsystem: str = "twin", node: str = "twin", timeout: float = 5.0) -> None:
    """One fault recorded or cleared (`record`: an emulator.events.FaultPayload's dict), over one short-lived
    connection to the manifest's broker: the event `fault`/`fault_clear` at twin time `now`, then the
    fault record, QoS 1, acknowledged. OSError or TimeoutError when the broker cannot be reached or
    does not acknowledge."""
    with SyncPublisher(broker["host"], broker["port"], twin, source, wait=True) as pub:
        pub.event(subsystem, "fault" if record["active"] else "fault_clear", {"fault": record}, time=now,
                  message=message, node=node)
        pub.fault(node, record)
        pub.flush(timeout)


class Subscription(ClosedOnExit):
    """A subscription to a twin's bus (paho's network thread): messages arrive as dicts with their
    topic under '_topic' (a payload that is not a JSON object under 'payload'). `Twin.events()` makes one."""

    def __init__(self, host: str, port: int, topics: list[str], connect_timeout: float = 10.0) -> None:
        self.messages: queue.Queue[dict[str, Any]] = queue.Queue()
        self._subscribed = threading.Event()
        import paho.mqtt.client as mqtt

        self._client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2)
        self._client.on_connect = lambda c, *_: c.subscribe([(t, 1) for t in topics])
        self._client.on_subscribe = lambda *_: self._subscribed.set()
        self._client.on_message = self._on_message
        self._client.connect(host, port)
        self._client.loop_start()
        if not self._subscribed.wait(connect_timeout):
            self.close()
            raise TimeoutError(f"could not subscribe at MQTT broker {host}:{port} within {connect_timeout:.0f}s")

    def _on_message(self, _client: Any, _userdata: Any, msg: Any) -> None:
        try:
            doc = json.loads(msg.payload) if msg.payload else {}
        except json.JSONDecodeError:
            doc = {"payload": msg.payload.decode(errors="replace")}
        if not isinstance(doc, dict):
            doc = {"payload": doc}
        doc["_topic"] = msg.topic
        self.messages.put(doc)

    def get(self, timeout: float) -> dict[str, Any]:
        return self.messages.get(timeout=timeout)

    def wait_for(self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 10.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                msg = self.messages.get(timeout=left)
            except queue.Empty:
                break
            if predicate(msg):
                return msg
        raise TimeoutError(f"no matching message within {timeout:.1f}s")

    def wait_for_all(self, predicates: dict[str, Callable[[dict[str, Any]], bool]],
                     timeout: float = 10.0) -> dict[str, dict[str, Any]]:
        """The first message matching each predicate, whatever order they arrive in (events from
        different daemons race); {name: message}. Messages matching none are dropped."""
        found: dict[str, dict[str, Any]] = {}
        deadline = time.monotonic() + timeout
        while len(found) < len(predicates) and (left := deadline - time.monotonic()) > 0:
            try:
                msg = self.messages.get(timeout=left)
            except queue.Empty:
                break
            for name, predicate in predicates.items():
                if name not in found and predicate(msg):
                    found[name] = msg
        if len(found) < len(predicates):
            missing = sorted(set(predicates) - set(found))
            raise TimeoutError(f"no message for {', '.join(missing)} within {timeout:.1f}s")
        return found

    def close(self) -> None:
        self._client.loop_stop()
        self._client.disconnect()
