"""What every twin daemon's process does around its own work: stop cleanly on SIGTERM or SIGINT,
and its command line (`python -m services.<x>.daemon CONFIG.json`, as the supervisor forks it)."""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
from collections.abc import Callable
from pathlib import Path

from emulator.daemon_config import DaemonConfig


def stop_event() -> asyncio.Event:
    """An event the running loop sets on SIGTERM or SIGINT: the daemon's cue to stop."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    return stop


def main(module: str, run: Callable[[DaemonConfig], None]) -> None:
    """A daemon module's `__main__`: `run` its config file, logging to stderr (the supervisor's log)."""
    if len(sys.argv) != 2:
        sys.exit(f"usage: python -m {module} CONFIG.json")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    run(DaemonConfig.from_file(Path(sys.argv[1])))
