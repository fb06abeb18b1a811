"""emulator/process.py reaps what it stopped even when the process dies between the reap and the
liveness check (a zombie reads as not alive): CI once left such a zombie behind."""

from __future__ import annotations

import os
import subprocess
import time

import pytest

from emulator import process


def test_a_process_that_dies_after_the_reap_is_still_collected(monkeypatch: pytest.MonkeyPatch) -> None:
    proc = subprocess.Popen(["sleep", "0.05"])
    real = process._reap
    calls = []

    def late_reap(pid: int) -> None:
        calls.append(pid)
        if len(calls) == 1:   # the first reap finds it running; it dies right after, a zombie
            time.sleep(0.3)
            return
        real(pid)

    monkeypatch.setattr(process, "_reap", late_reap)
    assert process._wait_gone([proc.pid], 1.0) == []
    with pytest.raises(ChildProcessError):
        os.waitpid(proc.pid, os.WNOHANG)   # reaped: no zombie left
    proc.returncode = 0   # (Popen's own wait would find nothing to collect)
