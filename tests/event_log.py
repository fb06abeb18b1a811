"""The suite-wide event check (issue 14): every event and fault record published while the tests
run is logged by the publishers (emulator/bus.py, $CLUSTERTWIN_EVENT_LOG, inherited by every twin's
supervisor and daemons) and must validate against emulator/events.py; the session fails otherwise,
naming each bad message. Registered by tests/conftest.py, which starts the log when it is imported:
conftests below it copy os.environ when they are imported, before pytest_configure (tests/lustre)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from emulator import events
from emulator.bus import EVENT_LOG_ENV


class EventLogCheck:
    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="clustertwin-events-"))
        self.path = self.dir / "events.jsonl"
        self.path.touch()
        self.previous = os.environ.get(EVENT_LOG_ENV)
        os.environ[EVENT_LOG_ENV] = str(self.path)
        self.count, self.problems = 0, []

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.previous is None:
            os.environ.pop(EVENT_LOG_ENV, None)
        else:
            os.environ[EVENT_LOG_ENV] = self.previous
        self.count, self.problems = events.check_log(self.path)
        if self.problems:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        else:
            shutil.rmtree(self.dir, ignore_errors=True)

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if not self.problems:
            if self.count:
                terminalreporter.write_line(f"events: all {self.count} published messages (events, fault records, "
                                            "first telemetry samples) validate against emulator/events.py")
            return
        terminalreporter.section("events that do not validate against emulator/events.py", red=True)
        for line in self.problems:
            terminalreporter.write_line(line)
        terminalreporter.write_line(f"{len(self.problems)} of {self.count} published messages invalid "
                                    f"(log kept: {self.path})")


_early: list[EventLogCheck] = []


def start() -> None:
    """Set $CLUSTERTWIN_EVENT_LOG now, for the session `for_session` will then check."""
    if not _early:
        _early.append(EventLogCheck())


def for_session() -> EventLogCheck:
    """The check of this session: the log `start` began, or, for a pytest run inside this one
    (pytester), a log of its own (the outer one's is restored at its end)."""
    return _early.pop() if _early else EventLogCheck()
