"""The configuration a supervisor hands to each daemon it starts (also readable from a JSON file)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from emulator.clock import Clock


@dataclass(frozen=True)
class DaemonConfig:
    name: str                    # the daemon's name, e.g. "gpu001"
    kind: str                    # "gpu_node", ...
    twin: str                    # the twin instance, used in MQTT topics and identities
    spec: dict[str, Any]         # the component's own spec (e.g. a GpuServerSpec as a dict)
    grpc: str                    # host:port for its gRPC API
    metrics: str | None          # host:port for its Prometheus endpoint, if any
    store_url: str
    broker_host: str
    broker_port: int
    log_file: str | None = None
    netns: str | None = None     # network namespace of the daemon's host (netns backend), else None
    clock_epoch: float = 0.0
    clock_scale: float = 1.0
    telemetry_interval: float = 1.0
    run_dir: str | None = None   # the twin's run directory (None: a daemon started on its own, e.g. in compose)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def clock(self) -> Clock:
        return Clock(self.clock_epoch, self.clock_scale)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> DaemonConfig:
        return cls(**d)

    @classmethod
    def from_file(cls, path: Path) -> DaemonConfig:
        return cls.from_dict(json.loads(Path(path).read_text()))


def split_hostport(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host, int(port)
