"""The manifest: what a running twin is and where each of its daemons answers (RUN/manifest.json).

The supervisor writes it through this type and every reader reads it through this type, so the
contract between `twin up`, the SDK, the CLI and the workloads is checked where it is written. A
service's own fields on its daemon entries (an OSD's id, the gateway's S3 URL, a Lustre server's
admin address) and its manifest sections (`lustre`: what a client mount needs) are kept as the
service wrote them (`extra="allow"`): the core does not know them, the service's code reads them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from emulator.errors import NotFound


class ClockInfo(BaseModel):
    epoch: float = 0.0     # the wall time the twin clock started at (0: the twin clock is wall time)
    scale: float = 1.0     # twin seconds per wall second


class BrokerInfo(BaseModel):
    host: str
    port: int
    url: str
    managed: bool          # started by the supervisor (False: an external broker, --broker-url)
    topic_prefix: str


class ManagementInfo(BaseModel):
    host: str
    addresses: dict[str, str]
    netns: str | None = None


class DaemonEntry(BaseModel):
    """One daemon: its name and kind, the host it emulates, its gRPC address and its host's addresses."""

    model_config = ConfigDict(extra="allow")

    name: str
    kind: str
    host: str
    grpc: str
    addresses: dict[str, str]
    service: str | None = None       # its gRPC service's full name, e.g. clustertwin.v1.GpuNode
    netns: str | None = None

    @property
    def health_address(self) -> str:
        """Where `twin` checks its health: its management (`admin`, OOB) address when its service listens
        on a data plane the operator port does not reach (Lustre's on the storage network)."""
        return self.get("admin") or self.grpc

    def get(self, key: str, default: Any = None) -> Any:
        """A service's own field of this entry (e.g. `osd`, `s3`, `bulk`), or `default`."""
        return getattr(self, key, default)


class Manifest(BaseModel):
    model_config = ConfigDict(extra="allow")   # services' sections (e.g. `lustre`), `network_backend`

    twin: str
    topology: str
    topology_file: str
    network: str
    slot: int
    run_dir: str
    clock: ClockInfo
    store: str
    broker: BrokerInfo
    management: ManagementInfo
    daemons: list[DaemonEntry]

    @classmethod
    def load(cls, path: str | Path) -> Manifest:
        return cls.model_validate_json(Path(path).read_text())

    def dump(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    def daemons_of(self, kind: str) -> list[DaemonEntry]:
        return [d for d in self.daemons if d.kind == kind]

    def daemon(self, name: str) -> DaemonEntry:
        for d in self.daemons:
            if d.name == name:
                return d
        known = ", ".join(d.name for d in self.daemons[:6])
        raise NotFound(f"no daemon named {name!r} in twin {self.twin!r} (daemons: {known}, ...)")

    def section(self, name: str) -> dict[str, Any] | None:
        """A service's manifest section (`lustre`, ...), None if the twin does not run it."""
        return (self.model_extra or {}).get(name)
