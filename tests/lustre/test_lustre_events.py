"""Each `twin lustre fault` is an event on the bus: a subscriber to clustertwin/<twin>/events/lustre/#
sees oss-kill, oss-start, ost-full, ost-clear and mds-kill as the events services/lustre/events.py
documents (topic PREFIX/events/lustre/<kind>, payload "time", "node", "kind", "message" and the
kind's fields), and the filesystem keeps working through them."""

from __future__ import annotations

import queue
import time
from collections.abc import Iterator
from typing import Any

import pytest

from emulator import bus
from emulator.manifest import Manifest
from tests.lustre.conftest import LustreMount, needs_fuse

pytestmark = needs_fuse

COMMON = {"time", "node", "kind", "message"}


class Events:
    def __init__(self, manifest: Manifest) -> None:
        self.prefix = f"clustertwin/{manifest.twin}/events/lustre/"
        self.seen: list[tuple[str, dict[str, Any]]] = []
        self.sub = bus.Subscription(manifest.broker.host, manifest.broker.port, [self.prefix + "#"])

    def wait(self, kind: str, timeout: float = 20.0, **fields: Any) -> dict[str, Any]:
        """The first event of `kind` with these fields not yet waited for, received before this call or within
        `timeout` (events of one fault come from several daemons, in no fixed order)."""
        deadline = time.monotonic() + timeout
        while True:
            while True:
                try:
                    m = self.sub.messages.get_nowait()
                    self.seen.append((m.pop("_topic"), m))
                except queue.Empty:
                    break
            for n, (topic, payload) in enumerate(self.seen):
                if payload.get("kind") == kind and all(payload.get(k) == v for k, v in fields.items()):
                    assert topic == self.prefix + kind, topic
                    del self.seen[n]
                    return payload
            if time.monotonic() > deadline:
                raise AssertionError(f"no {kind} {fields} event within {timeout:.0f}s; seen {self.seen}")
            time.sleep(0.05)

    def close(self) -> None:
        self.sub.close()


@pytest.fixture(scope="module")
def events(rack_lustre: LustreMount) -> Iterator[Events]:
    e = Events(rack_lustre.manifest)
    yield e
    e.close()


def check(payload: dict[str, Any], kind: str, node: str | set[str], **fields: Any) -> None:
    assert COMMON | set(fields) <= set(payload), payload
    assert payload["kind"] == kind and payload["message"], payload
    assert payload["node"] in ({node} if isinstance(node, str) else node), payload
    assert abs(payload["time"] - time.time()) < 60, payload
    for k, v in fields.items():
        assert payload[k] == v, (k, payload)


def test_ost_full_and_clear(rack_lustre: LustreMount, events: Events) -> None:
    mds = {d.name for d in rack_lustre.manifest.daemons_of("lustre_mds")}
    rack_lustre.cli("lustre", "fault", "ost-full", "1")
    check(events.wait("ost_full", ost=1), "ost_full", mds, ost=1)
    rack_lustre.cli("lustre", "fault", "ost-clear", "1")
    check(events.wait("ost_full_clear", ost=1), "ost_full_clear", mds, ost=1)


def test_oss_kill_and_start(rack_lustre: LustreMount, events: Events) -> None:
    (rack_lustre.mnt / "before-oss-kill").write_bytes(b"x" * 1000)
    rack_lustre.cli("lustre", "fault", "oss-kill", "oss01")
    try:
        check(events.wait("oss_down", oss="oss01"), "oss_down", "oss01", oss="oss01")
        check(events.wait("oss_failover", to="oss02"), "oss_failover", "oss02", **{"from": "oss01", "to": "oss02"})
    finally:
        rack_lustre.cli("lustre", "fault", "oss-start", "oss01")
    check(events.wait("oss_up", oss="oss01"), "oss_up", "oss01", oss="oss01")
    check(events.wait("oss_failback", to="oss01"), "oss_failback", "oss02", **{"from": "oss02", "to": "oss01"})
    assert (rack_lustre.mnt / "before-oss-kill").read_bytes() == b"x" * 1000


def test_mds_kill(rack_lustre: LustreMount, events: Events) -> None:
    r = rack_lustre.cli("lustre", "fault", "mds-kill")
    killed = r.stdout.split("killed the active MDS ")[1].split()[0]
    standby = ({"mds01", "mds02"} - {killed}).pop()
    e = events.wait("mds_failover")
    check(e, "mds_failover", standby, mdt=0, to=standby, **{"from": killed})
    (rack_lustre.mnt / "after-mds-kill").write_text("metadata served by the standby")
    assert (rack_lustre.mnt / "after-mds-kill").read_text() == "metadata served by the standby"
