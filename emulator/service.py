"""The service registry: each emulated service (GPU servers, the fabric, Ceph, Lustre, Slurm) describes
itself in one object, and the emulator core finds them without importing any.

A service registers `SERVICE = Service(...)` in its own package and names it in the entry-point
group `clustertwin.services` (pyproject.toml), as pytest finds its plugins. The core then plans,
starts, checks and stops a service through that object alone: the daemon code is loaded by its
"module:function" name in the child that runs it, so `twin --help` imports no daemon. Each daemon
kind names its spec model (a DaemonSpec: the kind's own configuration, typed), which the daemon's
config is parsed with before it runs. A service's own `twin up` options (`--storage-timing`, ...) are a
pydantic model it names: the CLI makes a flag of each field and the options carry the values, checked
by that model, under the service's name.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from emulator.daemon_config import DaemonConfig, DaemonSpec
from emulator.errors import UserError
from emulator.store import store_url

if TYPE_CHECKING:
    from emulator.options import Addressing, Options
    from emulator.rundir import RunDir
    from emulator.topology import Topology

ENTRY_POINT_GROUP = "clustertwin.services"


class ServiceError(UserError, RuntimeError):
    """A service refused the options of `twin up` before anything started (the message says why)."""


@dataclass(frozen=True)
class PlanContext:
    """What a service's planner gets: the topology, where its hosts sit, and the twin's options."""

    topo: Topology
    hosts: Addressing
    run_dir: Path
    opts: Options
    broker_host: str
    broker_port: int

    def config(self, name: str, kind: str, host: str, grpc: str, *, spec: DaemonSpec,
               metrics: str | None = None, store: str | None = None) -> DaemonConfig:
        """A daemon's configuration with the twin-wide fields filled in one place; `spec` is its kind's."""
        return DaemonConfig(
            name=name, kind=kind, twin=self.opts.twin, spec=spec, grpc=grpc, metrics=metrics,
            store_url=store_url(self.opts.store_url, self.run_dir / "state", store or name),
            broker_host=self.broker_host, broker_port=self.broker_port,
            log_file=str(self.run_dir / "logs" / f"{name}.log"), netns=self.hosts.netns(host),
            clock_epoch=self.opts.clock_epoch, clock_scale=self.opts.clock_scale,
            telemetry_interval=self.opts.telemetry_interval, run_dir=str(self.run_dir))


@dataclass
class ServicePlan:
    """A service's share of the twin: its daemons, their manifest entries, and manifest sections."""

    daemons: list[DaemonConfig] = field(default_factory=list)
    entries: list[dict[str, Any]] = field(default_factory=list)
    sections: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class DaemonKind:
    """A kind of daemon a service runs: the function that serves it and the model of its spec."""

    run: str                      # "module:function", loaded in the process that runs it
    spec: type[DaemonSpec]        # DaemonConfig.spec, parsed before `run` is called


@dataclass(frozen=True)
class Service:
    name: str                                        # `twin up --NAME` turns it on, unless always_on
    summary: str                                     # one line, for `twin --help` and docs
    order: int = 50                                  # plan order (manifest order); lower first
    always_on: bool = False                          # part of every twin (the GPU servers)
    daemons: Mapping[str, DaemonKind] = field(default_factory=dict)    # by kind name
    plan: Callable[[PlanContext], ServicePlan] | None = None
    check: Callable[[Options, Topology], None] | None = None    # raise ServiceError to refuse `twin up`
    # Its own `twin up` options: each field a `--field-name` flag (description: the help), values in
    # Options.service_options[name]; extra="forbid" on the model refuses a misspelt one.
    options: type[BaseModel] | None = None
    # Stop what the service's clients started before the daemons go (returns what it stopped); lower first.
    before_down: Callable[[RunDir], list[str]] | None = None
    down_order: int = 50
    cli: Mapping[str, str] = field(default_factory=dict)        # `twin NAME` sub-app -> "module:app"
    # Twin accessor -> a function of the Twin giving the attribute (`twin.ceph` is sdk["ceph"](twin))
    sdk: Mapping[str, Callable[[Any], Any]] = field(default_factory=dict)

    def enabled(self, opts: Options) -> bool:
        return self.always_on or self.name in opts.services


def load(ref: str) -> Any:
    """The object a "module:attribute" reference names."""
    module, _, attr = ref.partition(":")
    return getattr(importlib.import_module(module), attr)


@cache
def services() -> dict[str, Service]:
    """Every installed service, in plan order."""
    found = []
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        service = ep.load()
        if not isinstance(service, Service) or service.name != ep.name:
            raise RuntimeError(f"entry point {ep.name} = {ep.value} is not a Service named {ep.name!r}")
        found.append(service)
    return {s.name: s for s in sorted(found, key=lambda s: (s.order, s.name))}


def daemon_kinds() -> dict[str, DaemonKind]:
    """Every daemon kind of every service."""
    return {name: kind for s in services().values() for name, kind in s.daemons.items()}


def daemon_kind(kind: str) -> DaemonKind:
    try:
        return daemon_kinds()[kind]
    except KeyError:
        raise ServiceError(f"no installed service runs daemons of kind {kind!r}") from None


def typed(cfg: DaemonConfig) -> DaemonConfig:
    """The config with its spec parsed by its kind's model (SpecError naming each bad field)."""
    return cfg.typed(daemon_kind(cfg.kind).spec)


def runner(kind: str) -> Callable[[DaemonConfig], None]:
    """What runs a daemon of `kind`: its spec parsed by the kind's model first, then its `run`
    (importing the kind's code now, e.g. in the supervisor before it forks)."""
    run = load(daemon_kind(kind).run)
    return lambda cfg: run(typed(cfg))


def optional_services() -> list[str]:
    """The services `twin up` turns on by a flag."""
    return [s.name for s in services().values() if not s.always_on]
