"""The twin as a test harness in a container: `TwinContainer` (testcontainers) and pytest fixtures.

    from emulator.testing import TwinContainer

    with TwinContainer(topology="mini") as tc:          # image clustertwin:dev (docker/build.sh)
        node = tc.twin.gpu_node("gpu001")               # a connected emulator.client.Twin
        lease = node.lease("my-job", count=8)
        node.inject_xid(gpu=3, xid=79)                  # the fault API is the client's
        assert not node.lease_info(lease.id).active

The container runs `twin-serve` (docker/twin-serve.py): `twin up TOPOLOGY --run-dir /run/twin`,
then it keeps the twin running until the container is stopped. It uses the host's network, so the
manifest's loopback addresses (127.x) are reachable from the test as they are; the harness takes a
free address slot on the host (the same lock files as `twin up`) and tells the container to use it,
so a twin in a container and twins on the host never collide.

Every wait is bounded and names what it waited for; a twin that fails to come up is reported with
the container's logs; the container is stopped and removed when the harness stops, also when
starting failed or the test failed.

Pytest: `pytest_plugins = ["emulator.testing"]` in a conftest.py (or `pytest -p emulator.testing`)
gives the fixtures `twin_image`, `twin_container` (session-scoped), `twin` (the client) and
`twin_endpoints`. Needs the `testcontainers` package and a Docker engine; testcontainers' reaper
image cannot be pulled without a registry, so the reaper is disabled (TESTCONTAINERS_RYUK_DISABLED).
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")

from testcontainers.core.config import testcontainers_config  # noqa: E402
from testcontainers.core.container import DockerContainer  # noqa: E402

from emulator.addressing import SlotLease, acquire_slot  # noqa: E402
from emulator.client import Twin  # noqa: E402
from emulator.manifest import Manifest  # noqa: E402
from emulator.rundir import RunDir  # noqa: E402

if os.environ["TESTCONTAINERS_RYUK_DISABLED"].lower() in ("1", "true", "yes"):
    testcontainers_config.ryuk_disabled = True

DEFAULT_IMAGE = os.environ.get("TWIN_IMAGE", "clustertwin:dev")
CONTAINER_RUN_DIR = "/run/twin"
READY, FAILED = "TWIN READY", "TWIN FAILED"


class TwinContainerError(RuntimeError):
    """The twin in the container did not come up (or could not be reached); carries its logs."""


class TwinContainer(DockerContainer):
    """One twin (every daemon of `topology`) in one container on the host's network."""

    def __init__(self, image: str = DEFAULT_IMAGE, topology: str = "mini", *, start_timeout: float = 60.0,
                 stop_timeout: float = 10.0, twin_args: list[str] | None = None, **kwargs: Any) -> None:
        super().__init__(image, **kwargs)
        self.topology, self.start_timeout, self.stop_timeout = topology, start_timeout, stop_timeout
        self._twin_args = list(twin_args or [])
        self._slot: SlotLease | None = None
        self._local_run: Path | None = None
        self.manifest: Manifest | None = None
        self.twin: Twin | None = None
        self.started_in: float | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> TwinContainer:
        t0 = time.monotonic()
        try:
            self._slot = acquire_slot()
            self.with_env("TWIN_SLOT", str(self._slot.slot))
            self.with_command([self.topology, "--run-dir", CONTAINER_RUN_DIR, *self._twin_args])
            self._kwargs = {"network_mode": "host", "entrypoint": ["twin-serve"], **self._kwargs}
            super().start()
            self._wait_ready(t0 + self.start_timeout)
            self.manifest = self._read_manifest()
            self._local_run = Path(tempfile.mkdtemp(prefix="twin-container-"))
            (self._local_run / "manifest.json").write_text(json.dumps(self.manifest.dump(), indent=2))
            self.twin = Twin(RunDir(self._local_run), self.manifest)
            self._wait_reachable(t0 + self.start_timeout)
        except BaseException:
            self.stop()
            raise
        self.started_in = time.monotonic() - t0
        return self

    def stop(self, force: bool = True, delete_volume: bool = True) -> None:
        """Stop the twin (SIGTERM: `twin down` inside), then remove the container. Idempotent. The
        container goes even when closing the clients fails: one left running on the host's network
        would hold its slot's addresses after the lease below is released."""
        try:
            if self.twin is not None:
                twin, self.twin = self.twin, None
                for client in twin._clients.values():   # its SDK clients (channels)
                    client.close()
        finally:
            try:
                self._remove_container(force, delete_volume)
            finally:
                self._release()

    def _remove_container(self, force: bool, delete_volume: bool) -> None:
        if self._container is None:
            return
        try:
            self._container.stop(timeout=int(self.stop_timeout))
        except Exception:  # noqa: BLE001 - removal below is what matters
            pass
        super().stop(force=force, delete_volume=delete_volume)
        self._container = None

    def _release(self) -> None:
        if self._slot is not None:
            self._slot.release()
            self._slot = None
        if self._local_run is not None:
            for f in self._local_run.iterdir():
                f.unlink()
            self._local_run.rmdir()
            self._local_run = None

    # -- waits -------------------------------------------------------------------------------

    def logs(self) -> str:
        if self._container is None:
            return ""
        out, err = self.get_logs()
        return (out + err).decode(errors="replace")

    def _fail(self, what: str) -> TwinContainerError:
        return TwinContainerError(f"{what}\n--- container {self.image} logs ---\n{self.logs()[-6000:]}")

    def _wait_ready(self, deadline: float) -> None:
        """Until twin-serve prints TWIN READY (`twin up` returned: every daemon SERVING)."""
        while True:
            self._container.reload()
            logs = self.logs()
            if READY in logs:
                return
            if FAILED in logs or self._container.status in ("exited", "dead"):
                raise self._fail(f"twin {self.topology!r} failed to start in the container "
                                 f"(status {self._container.status})")
            if time.monotonic() > deadline:
                raise self._fail(f"timed out after {self.start_timeout:.0f}s waiting for '{READY}' from "
                                 f"`twin up {self.topology}` in container {self._container.short_id}")
            time.sleep(0.2)

    def _read_manifest(self) -> Manifest:
        result = self.exec(["cat", f"{CONTAINER_RUN_DIR}/manifest.json"])
        if result.exit_code != 0:
            raise self._fail(f"could not read {CONTAINER_RUN_DIR}/manifest.json: {result.output!r}")
        return Manifest.of(json.loads(result.output))

    def _wait_reachable(self, deadline: float) -> None:
        """Until every GPU server answers NodeInfo from this side (host network reaches 127.x)."""
        for name in self.twin.gpu_nodes:
            while True:
                try:
                    self.twin.gpu_node(name).node()
                    break
                except Exception as e:  # noqa: BLE001
                    if time.monotonic() > deadline:
                        raise self._fail(f"timed out waiting for {name} at "
                                         f"{self.twin.daemon(name).grpc} to answer from the host: {e}") from e
                    time.sleep(0.2)

    # -- what a test uses --------------------------------------------------------------------

    def endpoints(self) -> dict[str, Any]:
        """gRPC and metrics address of every daemon and the MQTT broker URL (S3 and Prometheus
        endpoints appear here when those services land in the twin)."""
        m = self.manifest
        if m is None:
            raise RuntimeError("the container is not started")
        return {"mqtt": m.broker.url, "grpc": {d.name: d.grpc for d in m.daemons},
                "metrics": {d.name: d.metrics for d in m.daemons if d.metrics}}

    def image_size(self) -> int:
        return int(self.get_docker_client().client.images.get(self.image).attrs["Size"])


# -- pytest plugin -------------------------------------------------------------------------------

try:
    import pytest
except ImportError:  # the module works without pytest
    pytest = None

if pytest is not None:

    @pytest.fixture(scope="session")
    def twin_image() -> str:
        """The image to run; override this fixture to build it first (tests/containers does)."""
        import docker

        try:
            docker.from_env().images.get(DEFAULT_IMAGE)
        except Exception as e:  # noqa: BLE001
            pytest.skip(f"image {DEFAULT_IMAGE} not available ({e}); build it with docker/build.sh")
        return DEFAULT_IMAGE

    @pytest.fixture(scope="session")
    def twin_container(twin_image: str):
        with TwinContainer(twin_image, topology=os.environ.get("TWIN_TOPOLOGY", "mini")) as tc:
            yield tc

    @pytest.fixture
    def twin(twin_container: TwinContainer) -> Twin:
        return twin_container.twin

    @pytest.fixture
    def twin_endpoints(twin_container: TwinContainer) -> dict[str, Any]:
        return twin_container.endpoints()
