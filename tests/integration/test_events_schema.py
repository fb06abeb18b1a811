"""The event schema (emulator/events.py): docs/EVENTS.md is rendered from it and cannot drift, the
envelope is built in one place, and a bad event is refused with the field named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from emulator import events

ROOT = Path(__file__).resolve().parents[2]


def test_events_md_is_rendered_from_the_schema() -> None:
    assert (ROOT / "docs" / "EVENTS.md").read_text() == events.render(), \
        "docs/EVENTS.md differs from emulator/events.py: run `python -m emulator.events > docs/EVENTS.md`"


def test_every_kind_is_documented_with_what_it_mirrors() -> None:
    doc = (ROOT / "docs" / "EVENTS.md").read_text()
    for k in events.KINDS:
        assert k.mirrors and all(f"`{kind}`" in doc for kind in k.kinds), k
    assert len(events.PAYLOADS) == sum(len(k.kinds) for k in events.KINDS), "a kind is listed twice"


def xid_event(**change: object) -> dict:
    doc = events.envelope("t1", "gpu", "gpu001", "xid",
                          {"seq": 4, "node": "gpu001", "gpu": 3, "xid": 79, "lease_id": "", "health": ""},
                          time=1.5, message="GPU has fallen off the bus")
    return {**doc, **change}


def test_an_envelope_validates_and_names_its_payload() -> None:
    env, payload = events.validate(xid_event())
    assert (env.twin, env.subsystem, env.source, env.kind, env.time) == ("t1", "gpu", "gpu001", "xid", 1.5)
    assert len(env.id) == 32 and payload.xid == 79
    assert events.envelope("t1", "gpu", "gpu001", "xid", {}, time=0)["id"] != env.id


@pytest.mark.parametrize(("change", "named"), [
    ({"xid": "seventy-nine"}, "gpu/xid payload: xid"),
    ({"gpu": None}, "gpu/xid payload: gpu"),
    ({"colour": "red"}, "gpu/xid payload: colour: Extra inputs"),
    ({"kind": "xdi"}, "unknown event kind gpu/xdi"),
    ({"subsystem": "gpus"}, "envelope: subsystem"),
    ({"v": 2}, "envelope: v"),
    ({"time": "now"}, "envelope: time"),
])
def test_a_bad_event_is_refused_naming_the_field(change: dict, named: str) -> None:
    with pytest.raises(events.EventError, match=named.replace("(", r"\(")):
        events.validate(xid_event(**change))


def test_a_missing_envelope_field_is_named() -> None:
    doc = xid_event()
    del doc["twin"]
    with pytest.raises(events.EventError, match="envelope: twin: Field required"):
        events.validate(doc)


def test_a_payload_may_not_shadow_the_envelope() -> None:
    with pytest.raises(events.EventError, match="reuses envelope field"):
        events.envelope("t1", "gpu", "gpu001", "xid", {"time": 3.0}, time=1.0)


def test_topics_are_checked_against_the_event() -> None:
    events.validate_message("clustertwin/t1/events/gpu001/xid", xid_event())
    with pytest.raises(events.EventError, match="published on"):
        events.validate_message("clustertwin/t1/events/gpu001/health", xid_event())
    record = {"id": "net-1", "subsystem": "network", "target": "gpu002", "kind": "node-cut", "params": {},
              "active": True, "injected_at": 1.0, "cleared_at": None, "effect": ""}
    events.validate_message("clustertwin/t1/faults/network/net-1", record)
    with pytest.raises(events.EventError, match="on the topic of 'net-2'"):
        events.validate_message("clustertwin/t1/faults/network/net-2", record)
    with pytest.raises(events.EventError, match="fault record: active"):
        events.validate_message("clustertwin/t1/faults/network/net-1", {**record, "active": "maybe"})


def test_check_log_names_each_bad_line(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    good = {"pid": 1, "topic": "clustertwin/t1/events/gpu001/xid", "retain": False, "doc": xid_event()}
    bad = {"pid": 2, "topic": "clustertwin/t1/events/gpu001/xid", "retain": False, "doc": xid_event(gpu="x")}
    log.write_text("\n".join([json.dumps(good), json.dumps(bad), "not json"]) + "\n")
    count, problems = events.check_log(log)
    assert count == 3 and len(problems) == 2
    assert problems[0].startswith(f"{log}:2 (pid 2, clustertwin/t1/events/gpu001/xid): gpu/xid payload: gpu")
    assert problems[1].startswith(f"{log}:3: ")


def test_telemetry_samples_are_checked_against_their_topic() -> None:
    sample = {"time": 1.0, "node": "gpu001", "gpu": 2, "uuid": "GPU-1", "power_w": 100.0, "temperature_c": 40.0,
              "memory_temperature_c": 45.0, "gpu_util": 0.0, "mem_copy_util": 0.0, "sm_clock_mhz": 1980,
              "mem_clock_mhz": 2619, "memory_used_mib": 0, "memory_free_mib": 81559, "total_energy_mj": 5.0,
              "health": "PASS", "last_xid": 0, "throttle_reasons": []}
    events.validate_message("clustertwin/t1/telemetry/gpu001/gpu/2", sample)
    with pytest.raises(events.EventError, match="telemetry of gpu001 GPU 2 on"):
        events.validate_message("clustertwin/t1/telemetry/gpu001/gpu/3", sample)
    with pytest.raises(events.EventError, match="telemetry: power_w"):
        events.validate_message("clustertwin/t1/telemetry/gpu001/gpu/2", {**sample, "power_w": "hot"})
