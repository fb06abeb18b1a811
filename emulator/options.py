"""`twin up`'s options, and what a planner asks of the network about a host."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Protocol


@dataclass(frozen=True)
class Options:
    """`twin up`'s options, written once: the CLI, `Twin.up` and the supervisor all build this."""

    twin: str
    network: str = "loopback"
    network_builder: str = "netns"        # what makes a netns network's nodes and links: netns (ip -batch) or mininet
    store_url: str | None = None          # None: SQLite per daemon in the run directory
    broker_url: str | None = None         # None: the supervisor starts Mosquitto
    clock_epoch: float = 0.0
    clock_scale: float = 1.0
    telemetry_interval: float = 1.0
    bandwidth_scale: float = 0.001        # netns links shaped to real rate x this (0: unshaped)
    services: tuple[str, ...] = ()        # the optional services turned on (`--fabric`, `--ceph`, `--lustre`)
    # Each service's own options (`--storage-timing`, ...), by service name, as its Service.options model
    # checked them; the service reads them back through that model.
    service_options: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Options:
        return cls(**{k: tuple(d[k]) if k == "services" else d[k] for k in cls.__dataclass_fields__ if k in d})

    def of(self, service: str) -> dict[str, Any]:
        """A service's own options as given (its model fills in the defaults)."""
        return dict(self.service_options.get(service, {}))

    def with_options(self, service: str, values: dict[str, Any]) -> Options:
        return replace(self, service_options={**self.service_options, service: values})

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__, services=list(self.services))


class Addressing(Protocol):
    """Where an emulated host sits: its address per plane and its network namespace, if any."""

    def addresses(self, host: str, index: int) -> dict[str, str]: ...
    def netns(self, host: str) -> str | None: ...
