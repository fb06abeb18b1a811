"""The suite-wide event check (tests/event_log.py): the daemons a twin's supervisor forks log what
they publish into the session's $CLUSTERTWIN_EVENT_LOG, and a session that publishes a malformed
event fails, naming it (checked in a pytest of its own, with a real Mosquitto)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from emulator import events
from emulator.bus import EVENT_LOG_ENV
from emulator.client import Twin
from tests.conftest import mosquitto as own_mosquitto

ROOT = Path(__file__).resolve().parents[2]


def logged(pred, since: int, timeout: float = 10.0) -> list[dict]:
    """The log's entries after byte `since` that match `pred` (waiting up to `timeout` for one)."""
    path = Path(os.environ[EVENT_LOG_ENV])
    deadline = time.monotonic() + timeout
    while True:
        found = [e for e in map(json.loads, path.read_bytes()[since:].splitlines()) if pred(e)]
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


def test_a_daemons_events_reach_the_session_log_and_validate(mini_twin: Twin) -> None:
    node = mini_twin.gpu_node("gpu002")
    since = Path(os.environ[EVENT_LOG_ENV]).stat().st_size   # the session's other twins logged before
    fault = node.inject_xid(gpu=5, xid=48)
    node.clear_fault(fault.id)
    lines = logged(lambda e: isinstance(e["doc"], dict) and fault.id in (e["doc"].get("id"),
                                                                         e["doc"].get("fault", {}).get("id")), since)
    pids = {e["pid"] for e in lines}
    daemon_pid = json.loads(mini_twin.run.daemons.read_text())["daemons"]["gpu002"]["pid"]
    assert pids == {daemon_pid} != {os.getpid()}, "the events come from the daemon the supervisor forked"
    kinds = [(e["topic"].split("/")[2], e["doc"].get("kind"), e["retain"]) for e in lines]
    assert ("events", "fault", False) in kinds and ("events", "fault_clear", False) in kinds
    records = [(e["doc"]["active"], e["retain"]) for e in lines if e["topic"].split("/")[2] == "faults"]
    assert records == [(True, True), (False, False)], "retained while active, then sent once cleared"
    for e in lines:
        events.validate_message(e["topic"], e["doc"])
    injected = next(e["doc"] for e in lines if e["doc"].get("kind") == "fault")
    assert injected["source"] == "gpu002" and injected["fault"]["target"] == "gpu002 GPU 5"
    assert injected["fault"]["params"] == {"xid": 48} and injected["fault"]["active"]


@pytest.fixture
def mosquitto(tmp_path: Path) -> Iterator[int]:
    with own_mosquitto(tmp_path) as port:
        yield port


INNER = '''
import os
from emulator import bus

PORT = int(os.environ["EVENTS_TEST_BROKER_PORT"])

def test_publish():
    with bus.SyncPublisher("127.0.0.1", PORT, "t1", "gpu009", wait=True) as pub:
        pub.event("gpu", "xid", {"seq": 1, "node": "gpu009", "gpu": 0, "xid": 79, "lease_id": "", "health": ""},
                  time=1.0, message="ok", node="gpu009")
        if os.environ.get("EVENTS_TEST_MALFORMED"):
            pub.publish(bus.event_topic("t1", "gpu009", "xid"), {"kind": "xid", "gpu": "zero"}, qos=1)
        pub.flush()
'''


@pytest.mark.parametrize("malformed", [False, True])
def test_a_malformed_event_fails_the_session_naming_it(pytester: pytest.Pytester, mosquitto: int,
                                                        monkeypatch: pytest.MonkeyPatch, malformed: bool) -> None:
    monkeypatch.setenv("EVENTS_TEST_BROKER_PORT", str(mosquitto))
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    if malformed:
        monkeypatch.setenv("EVENTS_TEST_MALFORMED", "1")
    pytester.makeconftest("from tests.event_log import EventLogCheck\n\n"
                          "def pytest_configure(config):\n"
                          "    config.pluginmanager.register(EventLogCheck(), 'event-log')\n")
    pytester.makepyfile(test_inner=INNER)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    out = result.stdout.str()
    if not malformed:
        assert result.ret == 0, out
        assert "events: all 1 published messages" in out
        return
    assert result.ret == pytest.ExitCode.TESTS_FAILED, out
    result.stdout.fnmatch_lines(["*events that do not validate against emulator/events.py*",
                                 "*clustertwin/t1/events/gpu009/xid): envelope: v: Field required*",
                                 "*1 of 2 published messages invalid*"])
    assert "1 passed" in out   # the test passed: the session failed on the event alone


def test_the_log_is_set_before_the_conftests_below_are_imported(pytester: pytest.Pytester,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """tests/lustre/conftest.py copies os.environ for its `twin` commands when it is imported, which
    is before pytest_configure: a log started there was never seen by the Lustre daemons."""
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.delenv(EVENT_LOG_ENV)
    pytester.makeconftest("from tests.conftest import pytest_configure  # noqa: F401\n")
    sub = pytester.mkpydir("sub")
    sub.joinpath("conftest.py").write_text("import os\n\nENV = dict(os.environ)\n")
    sub.joinpath("test_env.py").write_text(
        "import os\nfrom sub.conftest import ENV\n\n"
        f"def test_env():\n    assert ENV.get({EVENT_LOG_ENV!r}) == os.environ[{EVENT_LOG_ENV!r}]\n")
    pytester.runpytest_subprocess("-p", "no:cacheprovider", "sub/test_env.py").assert_outcomes(passed=1)


def test_twin_events_check_flags_what_is_not_in_the_schema(mini_twin: Twin, twin_exe: str,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess

    from emulator import bus

    b, name = mini_twin.manifest.broker, mini_twin.name
    good, bad = bus.event_topic(name, "gpu099", "xid"), bus.event_topic(name, "gpu099", "health")
    monkeypatch.delenv(EVENT_LOG_ENV)   # the malformed message stays out of the session's log
    with bus.SyncPublisher(b.host, b.port, name, "gpu099", wait=True) as pub:
        # Retained, so that `twin events` gets both whenever it has subscribed.
        doc = events.envelope(name, "gpu", "gpu099", "xid", {"seq": 1, "node": "gpu099", "gpu": 0, "xid": 79,
                                                              "lease_id": "", "health": ""}, time=1.0)
        pub.publish(good, doc, qos=1, retain=True)
        pub.publish(bad, {"kind": "health"}, qos=1, retain=True)
        pub.flush()
        try:
            r = subprocess.run([twin_exe, "events", "--run-dir", str(mini_twin.run.path), "--node", "gpu099",
                                "--check", "--count", "2", "--timeout", "60"], capture_output=True, text=True,
                               timeout=90)
        finally:
            for topic in (good, bad):
                pub.publish(topic, b"", qos=1, retain=True)
            pub.flush()
    assert r.returncode == 1, r
    assert "events/gpu099/xid" in r.stdout and "events/gpu099/health" in r.stdout
    assert r.stderr.count("not in the schema") == 1 and "envelope: v: Field required" in r.stderr
