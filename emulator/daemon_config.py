"""The configuration a supervisor hands to each daemon it starts (also readable from a JSON file).

Its twin-wide fields are the same for every daemon; `spec` is the daemon kind's own configuration,
a pydantic model its service declares (`DaemonKind.spec`, emulator/service.py) and the daemon parses
at start (`OsdSpec.of(cfg)`): a missing or mistyped field stops the daemon with the field named.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, ValidationError

from emulator.clock import Clock
from emulator.errors import UserError


class SpecError(UserError, ValueError):
    """A daemon's spec that its kind's model refuses (the message names the daemon and each bad field)."""


class DaemonSpec(BaseModel):
    """Base of a daemon kind's spec model: every field named (an unknown one is refused, as a typo would
    be), frozen once parsed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    @classmethod
    def of(cls, cfg: DaemonConfig) -> Self:
        """The daemon's spec as this model: the one parsed at start, or parsed now; SpecError if malformed."""
        if isinstance(cfg.spec, cls):
            return cfg.spec
        doc = cfg.spec.model_dump() if isinstance(cfg.spec, BaseModel) else cfg.spec
        try:
            return cls.model_validate(doc)
        except ValidationError as e:
            bad = "; ".join(f"{'.'.join(map(str, err['loc'])) or '(spec)'}: {err['msg']}" for err in e.errors())
            raise SpecError(f"daemon {cfg.name} ({cfg.kind}): its spec is not a {cls.__name__}: {bad}") from None


@dataclass(frozen=True)
class DaemonConfig:
    name: str                    # the daemon's name, e.g. "gpu001"
    kind: str                    # "gpu_node", ...
    twin: str                    # the twin instance, used in MQTT topics and identities
    spec: DaemonSpec | dict[str, Any]   # its kind's own configuration (a dict until parsed: `Spec.of(cfg)`)
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

    @property
    def clock(self) -> Clock:
        return Clock(self.clock_epoch, self.clock_scale)

    def typed(self, model: type[DaemonSpec]) -> DaemonConfig:
        """This config with its spec parsed by `model` (SpecError naming each bad field)."""
        return dataclasses.replace(self, spec=model.of(self))

    def to_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        if isinstance(self.spec, BaseModel):
            d["spec"] = self.spec.model_dump(mode="json")
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> DaemonConfig:
        """From JSON. Configs written before specs were typed kept part of a kind's fields in `extra`:
        they are the spec's too."""
        d = dict(d)
        if "extra" in d:
            d["spec"] = {**d.get("spec", {}), **(d.pop("extra") or {})}
        return cls(**d)

    @classmethod
    def from_file(cls, path: Path) -> DaemonConfig:
        return cls.from_dict(json.loads(Path(path).read_text()))


def split_hostport(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host, int(port)
