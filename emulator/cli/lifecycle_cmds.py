"""`twin up`, `twin down`, `twin status`, `twin endpoints`."""

from __future__ import annotations

import inspect
import json
import time
from collections.abc import Callable
from typing import Annotated, Any, Literal, get_origin

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from emulator import lifecycle
from emulator.cli.common import DEFAULT, RunDirOption, console, fail, user_errors
from emulator.manifest import Manifest
from emulator.rundir import RunDir
from emulator.service import services


def up(
    topology: Annotated[str, typer.Argument(help="Topology name (under topologies/) or path.")] = "mini",
    run_dir: RunDirOption = DEFAULT,
    network: Annotated[str, typer.Option(help="loopback (127.x), netns (namespaces; root) or mininet "
                                             "(the same namespaces, built by Mininet's API; root).")] = "loopback",
    name: Annotated[str | None, typer.Option(help="Twin name for topics and identities.")] = None,
    store_url: Annotated[str | None, typer.Option(help="SQLAlchemy URL; default SQLite in the run dir.")] = None,
    broker_url: Annotated[str | None, typer.Option(help="Use this MQTT broker (mqtt://HOST:PORT).")] = None,
    clock_scale: Annotated[float, typer.Option(help="Twin seconds per wall second.")] = 1.0,
    telemetry_interval: Annotated[float, typer.Option(help="Seconds between telemetry samples.")] = 1.0,
    bandwidth_scale: Annotated[float, typer.Option(help="netns: links shaped to real rate x this; 0 unshaped.")
                               ] = 0.001,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for every daemon to be healthy.")] = 120.0,
    **services: Any,
) -> None:
    """Start a twin: one process per emulated daemon, a broker, a manifest of endpoints."""
    started = time.monotonic()
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, transient=True) as bar:
        task = bar.add_task("starting", total=None)

        def progress(done: int, total: int, phase: str) -> None:
            bar.update(task, completed=done, total=total, description=phase)

        with user_errors():
            manifest = lifecycle.up(topology, RunDir(run_dir), network=network, name=name, store_url=store_url,
                                    broker_url=broker_url, clock_scale=clock_scale,
                                    telemetry_interval=telemetry_interval, bandwidth_scale=bandwidth_scale,
                                    timeout=timeout, progress=progress, **services)
    n = len(manifest.daemons)
    console.print(f"twin [bold]{manifest.twin}[/] up: {n} daemons healthy in {time.monotonic() - started:.1f}s "
                  f"(network {manifest.network}, broker {manifest.broker.url})")
    console.print(f"run directory {manifest.run_dir}; `twin endpoints` lists every address, `twin down` stops it")


def _with_service_flags(command: Callable[..., None]) -> Callable[..., None]:
    """`twin up --NAME` for each optional service and a flag for each of a service's own options, as the
    service registered itself (emulator/service.py), in place of the command's **services."""
    sig = inspect.signature(command, eval_str=True)
    params = [p for p in sig.parameters.values() if p.kind is not p.VAR_KEYWORD]
    for service in services().values():
        if not service.always_on:
            flag = Annotated[bool, typer.Option(f"--{service.name}", help=service.summary)]
            params.append(inspect.Parameter(service.name, inspect.Parameter.KEYWORD_ONLY, default=False,
                                            annotation=flag))
        for name, f in (service.options.model_fields if service.options else {}).items():
            kind = str if get_origin(f.annotation) is Literal else f.annotation   # the model checks the choice
            option = Annotated[kind, typer.Option(f"--{name.replace('_', '-')}", help=f.description)]
            params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=f.default,
                                            annotation=option))
    command.__signature__ = sig.replace(parameters=params)
    command.__annotations__ = {p.name: p.annotation for p in params} | {"return": None}
    return command


up = _with_service_flags(up)


def down(run_dir: RunDirOption = DEFAULT) -> None:
    """Stop the twin and everything it started."""
    run = RunDir(run_dir)
    with user_errors():
        stopped = lifecycle.down(run)
    if stopped:
        console.print(f"twin in {run.path} stopped ({', '.join(stopped)})")
    else:
        console.print(f"no twin running in {run.path}")


def status(run_dir: RunDirOption = DEFAULT,
           as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """What runs, its pid, restarts and gRPC health."""
    with user_errors():
        doc = lifecycle.status(RunDir(run_dir))
    if as_json:
        print(json.dumps(doc, indent=2))
        return
    healthy = sum(1 for d in doc["daemons"] if d["health"] == "SERVING")
    console.print(f"twin [bold]{doc['twin']}[/] ({doc['topology']}) in {doc['run_dir']}: "
                  f"supervisor {'pid ' + str(doc['supervisor']) if doc['supervisor'] else 'NOT RUNNING'}, "
                  f"{healthy}/{len(doc['daemons'])} daemons healthy, broker {doc['broker']}")
    table = Table("daemon", "kind", "grpc", "pid", "state", "restarts", "health")
    for d in doc["daemons"]:
        style = "" if d["health"] == "SERVING" else "red"
        table.add_row(d["name"], d["kind"], d["grpc"], str(d["pid"] or "-"), d["state"], str(d["restarts"]),
                      d["health"], style=style)
    console.print(table)
    if doc["supervisor"] is None or healthy < len(doc["daemons"]):
        raise typer.Exit(1)


def endpoints(run_dir: RunDirOption = DEFAULT,
              as_json: Annotated[bool, typer.Option("--json", help="Print the manifest as JSON.")] = False) -> None:
    """Every daemon's gRPC, metrics and broker addresses."""
    run = RunDir(run_dir)
    with user_errors():
        doc = run.read(run.manifest)
    if as_json:
        print(json.dumps(doc, indent=2))
        return
    manifest = Manifest.of(doc)
    b = manifest.broker
    console.print(f"twin {manifest.twin} ({manifest.topology}), network {manifest.network}")
    console.print(f"broker  {b.url}  topics {b.topic_prefix}/#")
    table = Table("daemon", "kind", "grpc", "http (metrics, UFM, S3)", "oob", "compute", "storage")
    for d in manifest.daemons:
        a = d.addresses
        table.add_row(d.name, d.kind, d.grpc, (d.urls() or [""])[0], a.get("oob", ""),
                      a.get("compute", ""), a.get("storage", ""))
    console.print(table)
    if not manifest.daemons:
        fail("the manifest lists no daemons", 1)
