"""`twin events`: tail the twin's MQTT bus (docs/EVENTS.md); `--check` flags what does not match the schema."""

from __future__ import annotations

import json
import queue
import time
from typing import Annotated

import typer

from emulator.cli.common import DEFAULT, RunDirOption, connect, console, err_console, user_errors
from emulator.events import EventError, validate_message


def events(
    run_dir: RunDirOption = DEFAULT,
    node: Annotated[str, typer.Option(help="Only this daemon ('+' for all).")] = "+",
    kind: Annotated[str, typer.Option(help="Only this event kind, e.g. xid ('+' for all).")] = "+",
    telemetry: Annotated[bool, typer.Option(help="Also show per-GPU telemetry.")] = False,
    count: Annotated[int, typer.Option(help="Stop after this many messages (0: never).")] = 0,
    timeout: Annotated[float, typer.Option(help="Stop after this many seconds (0: never).")] = 0.0,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON document per line.")] = False,
    check: Annotated[bool, typer.Option(help="Check each message against the schema (emulator/events.py); "
                                             "exit status 1 if one did not match.")] = False,
) -> None:
    """Print events (and, unless --kind narrows them, faults) as they happen (Ctrl-C to stop)."""
    twin = connect(run_dir)
    patterns = [f"events/{node}/{kind}"] + ([f"faults/{node}/#"] if kind == "+" else []) \
        + ([f"telemetry/{node}/#"] if telemetry else [])
    seen = bad = 0
    deadline = time.monotonic() + timeout if timeout else None
    with user_errors(), twin.events(*patterns) as sub:
        try:
            while not count or seen < count:
                wait = 0.5 if deadline is None else max(0.0, deadline - time.monotonic())
                if deadline is not None and wait == 0.0:
                    break
                try:
                    msg = sub.get(timeout=min(wait, 0.5))
                except queue.Empty:
                    continue
                seen += 1
                topic = msg.pop("_topic")
                if check and (problem := schema_problem(topic, msg)):
                    bad += 1
                    err_console.print(f"[red]not in the schema:[/] {topic}: {problem}", highlight=False, soft_wrap=True)
                if as_json:
                    print(json.dumps({"topic": topic} | msg), flush=True)
                else:
                    console.print(f"[dim]{topic}[/] {json.dumps(msg, separators=(',', ':'))}", highlight=False)
        except KeyboardInterrupt:
            pass
    if bad:
        raise typer.Exit(1)


def schema_problem(topic: str, msg: dict) -> str:
    """What is wrong with one message, '' if nothing (an empty retained payload removes a fault: fine)."""
    if not msg and "/faults/" in topic:
        return ""
    try:
        validate_message(topic, msg)
    except EventError as e:
        return str(e)
    return ""
