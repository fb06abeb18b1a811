#!/opt/venv/bin/python
"""Container entry point: start a twin, say so, keep it running, stop it cleanly on SIGTERM.

    twin-serve [TOPOLOGY] [twin up options...]        (default: mini --run-dir $TWIN_RUN_DIR)

Prints `TWIN READY <run-dir>` once `twin up` returns (every daemon healthy), then waits for the
supervisor. SIGTERM/SIGINT runs `twin down`. Exits non-zero when `twin up` fails or the supervisor
dies, so the container stops and its logs say why.

TWIN_SLOT=N makes the twin take address slot N: with host networking the harness holds slot N's
lock on the host and this process holds slots 0..N-1 in the container's own lock directory.
"""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

RUN_DIR = os.environ.get("TWIN_RUN_DIR", "/run/twin")


def hold_lower_slots(slot: int) -> list[int]:
    lock_dir = Path(os.environ.get("TWIN_SLOT_DIR", "/tmp/clustertwin-slots"))
    lock_dir.mkdir(parents=True, exist_ok=True)
    fds = []
    for i in range(slot):
        fd = os.open(lock_dir / f"slot-{i}.lock", os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fds.append(fd)
    return fds


def main(argv: list[str]) -> int:
    held = hold_lower_slots(int(os.environ["TWIN_SLOT"])) if os.environ.get("TWIN_SLOT") else []
    args = argv or ["mini"]
    if "--run-dir" not in args:
        args += ["--run-dir", RUN_DIR]
    run_dir = args[args.index("--run-dir") + 1]
    stopping = False

    def stop(signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    started = time.monotonic()
    rc = subprocess.call(["twin", "up", *args])
    if rc != 0:
        print(f"TWIN FAILED: twin up exited {rc}; logs under {run_dir}/logs", flush=True)
        for log in sorted(Path(run_dir, "logs").glob("*.log")):
            print(f"--- {log} (tail)", flush=True)
            print("\n".join(log.read_text(errors="replace").splitlines()[-20:]), flush=True)
        return rc
    print(f"TWIN READY {run_dir} in {time.monotonic() - started:.1f}s", flush=True)
    pid_file = Path(run_dir, "supervisor.pid")
    pid = int(pid_file.read_text().strip())
    while not stopping:
        if not Path(f"/proc/{pid}").exists():
            print(f"TWIN FAILED: supervisor {pid} died; see {run_dir}/logs/", flush=True)
            return 3
        time.sleep(0.5)
    subprocess.call(["twin", "down", "--run-dir", run_dir])
    for fd in held:
        os.close(fd)
    print("TWIN STOPPED", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
