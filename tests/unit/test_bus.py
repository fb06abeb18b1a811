"""emulator/bus.py against a real Mosquitto: both publishers build the envelope the schema accepts,
fault records are retained while active and removed once cleared, everything published on an
event topic lands in $CLUSTERTWIN_EVENT_LOG, and the daemons' queue drops the oldest when full."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from emulator import bus, events
from tests.conftest import mosquitto as own_mosquitto

XID = {"seq": 1, "node": "gpu001", "gpu": 2, "xid": 79, "lease_id": "", "health": ""}


@pytest.fixture(scope="module")
def port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    with own_mosquitto(tmp_path_factory.mktemp("mosquitto")) as free:
        yield free


@pytest.fixture
def event_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "events.jsonl"
    monkeypatch.setenv(bus.EVENT_LOG_ENV, str(path))
    return path


def record(active: bool) -> dict:
    return {"id": "gpu001-fault-1", "subsystem": "gpu", "target": "gpu001 GPU 2", "kind": "xid", "params": {"xid": 79},
            "active": active, "injected_at": 5.0, "cleared_at": None if active else 6.0, "effect": "lost"}


def test_sync_publisher_event_reaches_a_subscriber_and_the_log(port: int, event_log: Path) -> None:
    with bus.Subscription("127.0.0.1", port, ["clustertwin/t1/events/#"]) as sub, \
            bus.SyncPublisher("127.0.0.1", port, "t1", "gpu001", wait=True) as pub:
        sent = pub.event("gpu", "xid", XID, time=12.5, message="Xid 79", node="gpu001")
        pub.flush()
        got = sub.wait_for(lambda m: m["_topic"] == "clustertwin/t1/events/gpu001/xid")
    assert got.pop("_topic") and got == sent
    env, payload = events.validate(got)
    assert (env.twin, env.source, env.subsystem, env.time, payload.xid) == ("t1", "gpu001", "gpu", 12.5, 79)
    [line] = [json.loads(x) for x in event_log.read_text().splitlines()]
    assert line["topic"] == "clustertwin/t1/events/gpu001/xid" and line["doc"] == sent and not line["retain"]
    assert events.check_log(event_log) == (1, [])


def test_a_fault_record_is_retained_while_active_then_removed(port: int, event_log: Path) -> None:
    topic = "clustertwin/t2/faults/gpu001/gpu001-fault-1"
    marker = "clustertwin/t2/marker"
    with bus.SyncPublisher("127.0.0.1", port, "t2", "gpu001", wait=True) as pub:
        pub.fault("gpu001", record(True))
        pub.publish(marker, b"1", qos=1, retain=True)
        pub.flush()
        # Retained messages come in the order of the filters subscribed: the record, then the marker.
        with bus.Subscription("127.0.0.1", port, [topic, marker]) as sub:
            assert sub.get(timeout=10) == {**record(True), "_topic": topic}
        pub.fault("gpu001", record(False))
        pub.flush()
        with bus.Subscription("127.0.0.1", port, [topic, marker]) as sub:
            assert sub.get(timeout=10)["_topic"] == marker, "the cleared fault's record is still retained"
    logged = [json.loads(x) for x in event_log.read_text().splitlines()]
    assert [(e["doc"]["active"], e["retain"]) for e in logged] == [(True, True), (False, False)]
    assert events.check_log(event_log) == (2, [])


def test_the_daemons_publisher_sends_envelopes_and_its_status(port: int, event_log: Path) -> None:
    async def run() -> dict:
        pub = bus.Publisher("127.0.0.1", port, "t3", "fabric")
        task = asyncio.create_task(pub.run())
        await asyncio.wait_for(pub.connected.wait(), 10)
        doc = pub.event("fabric", "partition_set", {"seq": 1, "severity": "Info", "system": ""}, time=3.0,
                        message="partition created")
        await pub.close()
        task.cancel()
        return doc

    with bus.Subscription("127.0.0.1", port, ["clustertwin/t3/#"]) as sub:
        sent = asyncio.run(run())
        got = sub.wait_for_all({"event": lambda m: m["_topic"] == "clustertwin/t3/events/fabric/partition_set",
                                "offline": lambda m: m.get("payload") == "offline"})
    assert {k: v for k, v in got["event"].items() if k != "_topic"} == sent
    assert got["offline"]["_topic"] == "clustertwin/t3/status/fabric"
    assert events.check_log(event_log) == (1, [])   # status is not an event: not logged


def test_a_full_queue_drops_the_oldest_and_never_blocks(event_log: Path) -> None:
    pub = bus.Publisher("127.0.0.1", 1, "t4", "gpu001", maxsize=2)   # never connected
    for n in range(3):
        pub.publish(bus.telemetry_topic("t4", "gpu001", 0), {"n": n})
    assert pub.dropped == 1 and [json.loads(pub.queue.get_nowait().payload)["n"] for _ in range(2)] == [1, 2]
    [line] = event_log.read_text().splitlines()   # telemetry: the first sample of each GPU only
    assert json.loads(line)["doc"] == {"n": 0}


def test_what_is_not_an_event_is_logged_as_it_is_and_named(event_log: Path) -> None:
    bus.log_message("clustertwin/t5/events/gpu001/xid", b"Xid 79!", False)
    bus.log_message("clustertwin/t5/events/gpu001/xid", b"", True)   # a retained copy removed: nothing
    count, problems = events.check_log(event_log)
    assert count == 1 and "an event is a JSON object, not str" in problems[0]


def test_a_payload_cannot_hide_an_envelope_field(port: int) -> None:
    with bus.SyncPublisher("127.0.0.1", port, "t6", "gpu001", wait=True) as pub, \
            pytest.raises(events.EventError, match="reuses envelope field"):
        pub.event("gpu", "xid", {**XID, "twin": "other"}, time=1.0)


def test_an_unreachable_broker_is_an_error_for_a_command() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    with pytest.raises(OSError):
        bus.SyncPublisher("127.0.0.1", closed, "t7", "network", wait=True)


def test_only_the_bus_imports_an_mqtt_client() -> None:
    """One MQTT client style: everything else publishes and subscribes through emulator/bus.py."""
    import re

    root = Path(__file__).resolve().parents[2]
    pattern = re.compile(r"^\s*(import|from)\s+(paho|aiomqtt)\b", re.MULTILINE)
    offenders = [str(p.relative_to(root)) for d in ("emulator", "services", "workloads", "tests", "bench")
                 for p in (root / d).rglob("*.py") if pattern.search(p.read_text(errors="replace"))]
    assert offenders == ["emulator/bus.py"], offenders
