"""The fabric daemon on the daemon skeleton stopped by SIGTERM while its subnet comes up: it lets the
start finish, serves nothing, stops ibsim and OpenSM and exits 0 (real ibsim and OpenSM). ibsim is held
(SIGSTOP) from its fork until the daemon has taken the SIGTERM, so the stop always lands in the start."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from emulator.procutil import pid_alive
from tests.fabric.conftest import ROOT, _children, fabric_config, needs_subnet

WAIT_S = 60.0   # generous: only for the daemon to fork ibsim, or take a signal, on a loaded machine
SIGTERM_BIT = 1 << (signal.SIGTERM - 1)


def wait(what: str, ready: object, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + WAIT_S
    while not ready() and proc.poll() is None:   # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


def sigterm_pending(pid: int) -> bool:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(("ShdPnd:", "SigPnd:")) and int(line.split()[1], 16) & SIGTERM_BIT:
            return True
    return False


@needs_subnet
def test_sigterm_while_the_subnet_comes_up_leaves_nothing(tmp_path: Path) -> None:
    cfg = fabric_config(tmp_path)
    (tmp_path / "fabric.json").write_text(json.dumps(cfg.to_dict()))
    log = Path(str(cfg.log_file))
    with open(log, "ab") as out:
        proc = subprocess.Popen([sys.executable, "-m", "services.fabric.daemon", str(tmp_path / "fabric.json")],
                                cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
    kids: list[int] = []
    try:
        wait("ibsim forked", lambda: bool(kids or kids.extend(_children(proc.pid)) or kids), proc)
        assert kids, f"no ibsim forked: {log.read_text()[-2000:]}"
        os.kill(kids[0], signal.SIGSTOP)   # the subnet cannot come up while ibsim is held
        proc.send_signal(signal.SIGTERM)
        wait("the daemon took the SIGTERM", lambda: not sigterm_pending(proc.pid), proc)
        os.kill(kids[0], signal.SIGCONT)
        rc = proc.wait(WAIT_S)
    finally:
        for pid in kids[:1]:
            if pid_alive(pid):
                os.kill(pid, signal.SIGCONT)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = log.read_text()
    assert rc == 0, text[-2000:]
    assert not [p for p in _children(proc.pid) + kids if pid_alive(p)], text[-2000:]
    assert "fabric stopping" in text, text[-2000:]
    assert "serving gRPC" not in text and "fabric up" not in text, text[-2000:]
