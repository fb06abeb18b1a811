"""The manifest: what a running twin is and where each of its daemons answers (RUN/manifest.json).

The supervisor writes it through this type and every reader reads it through this type, so the
contract between `twin up`, the SDK, the CLI and the workloads is checked where it is written. A
service's own fields on its daemon entries (an OSD's id, the gateway's S3 URL, a Lustre server's
admin address) and its manifest sections (`lustre`: what a client mount needs) are kept as the
service wrote them (`extra="allow"`): the core does not know them, and the service reads them through
a model of its own (`entry.typed(RgwEntry)`, `LustreSection.of(manifest)`, in services/<x>/manifest.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from emulator.clock import Clock
from emulator.errors import NotFound, UserError

M = TypeVar("M", bound=BaseModel)


class ManifestError(UserError, ValueError):
    """A manifest (or a service's part of it) that does not have the fields its reader needs."""


def parse(model: type[M], doc: Any, what: str) -> M:
    """`doc` as `model`; a ManifestError naming `what` and each bad field otherwise."""
    try:
        return model.model_validate(doc)
    except ValidationError as e:
        bad = "; ".join(f"{'.'.join(map(str, err['loc'])) or '(top)'}: {err['msg']}" for err in e.errors())
        raise ManifestError(f"{what}: {bad}") from None


class ClockInfo(BaseModel):
    epoch: float = 0.0     # the wall time the twin clock started at (0: the twin clock is wall time)
    scale: float = 1.0     # twin seconds per wall second

    def to_clock(self) -> Clock:
        return Clock(self.epoch, self.scale)


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


class PlaneInfo(BaseModel):
    model_config = ConfigDict(extra="allow")   # how it is emulated, as `twin net show` prints it

    prefix: str              # its addresses, e.g. 10.103.0.0/16


class NetworkBackendInfo(BaseModel):
    """The netns network (`--network netns`): where its record is kept, and how each plane is emulated."""

    model_config = ConfigDict(extra="allow")   # its size and build timings, what `twin net show` prints

    state_dir: str
    prefix: str                                # its namespaces' name prefix, e.g. ct3
    planes: dict[str, PlaneInfo]
    operator_address: str | None = None


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
    metrics: str | None = None       # its Prometheus endpoint's URL, if it has one
    # Its management (OOB) address, when its service listens on a data plane the operator port does
    # not reach (Lustre's servers, on the storage network); the same server answers on both.
    admin: str | None = None

    @property
    def health_address(self) -> str:
        """Where `twin` checks its health: its `admin` address if it has one, else its gRPC address."""
        return self.admin or self.grpc

    def typed(self, model: type[M]) -> M:
        """This entry as a service's model of it (a DaemonEntry subclass that names the service's own
        fields, e.g. services.ceph.manifest.RgwEntry); a ManifestError names a missing or bad field."""
        return parse(model, self.model_dump(), f"manifest entry {self.name} ({self.kind})")

    def urls(self) -> list[str]:
        """Its HTTP endpoints for people (metrics, a REST API), as its service wrote them."""
        own = {k: v for k, v in self.model_dump().items() if k not in DaemonEntry.model_fields}   # the service's
        found = [self.metrics] if self.metrics else []
        return found + [v for v in own.values() if isinstance(v, str) and v.startswith("http")]


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
    network_backend: NetworkBackendInfo | None = None   # the netns network's, under --network netns

    @classmethod
    def load(cls, path: str | Path) -> Manifest:
        return cls.model_validate_json(Path(path).read_text())

    @classmethod
    def of(cls, doc: Any) -> Manifest:
        """A manifest read from JSON (a dict); a ManifestError names each missing or bad field."""
        return parse(cls, doc, "manifest")

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
        """A service's manifest section (`lustre`, ...) as written, None if the twin does not run it;
        its service parses it with its own model (e.g. services.lustre.manifest.LustreSection)."""
        return (self.model_extra or {}).get(name)

    def section_as(self, name: str, model: type[M]) -> M | None:
        """A service's section parsed by the service's model, None if the twin does not run it."""
        doc = self.section(name)
        return None if doc is None else parse(model, doc, f"manifest section {name!r}")
