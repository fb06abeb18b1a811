"""Waiting in a test for a condition of a running twin (a state the daemons reach on their own time)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def wait_for(what: str, cond: Callable[[], Any], timeout: float = 60.0, every: float = 0.1) -> Any:
    """Call `cond` every `every` seconds until it returns something true, and return that; an
    AssertionError naming `what` once `timeout` seconds have passed."""
    deadline = time.monotonic() + timeout
    while not (got := cond()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")
        time.sleep(every)
    return got
