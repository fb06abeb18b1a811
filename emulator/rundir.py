"""The run directory: everything one twin instance creates, and the manifest that describes it.

    RUN_DIR/
      config.json      what `twin up` asked for (topology, network, store, broker, clock)
      manifest.json    every daemon's endpoints; written by the supervisor before it starts them
      daemons.json     the supervisor's live view: pid and its start time, restarts, state per daemon
      supervisor.pid   the supervisor's pid; supervisor.start its start time (a reused pid is not it)
      control.sock     the supervisor's control socket (network faults go through it)
      state/           databases (SQLite by default, one per daemon: each owns its tables)
      logs/            one log per daemon, plus the supervisor's and the broker's
      broker/          the Mosquitto config
      network/         the emulated network's record (netns backend), so clean-up works after a crash
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from emulator.errors import UserError
from emulator.manifest import Manifest
from emulator.process import same_process, start_time

DEFAULT_RUN_DIR = Path(os.environ.get("TWIN_RUN_DIR", ".twin"))


class RunDirError(UserError, RuntimeError):
    """A run directory that is missing, unreadable or not a twin's."""


class RunDir:
    def __init__(self, path: Path | str | None = None) -> None:
        self.path = Path(path if path is not None else DEFAULT_RUN_DIR).resolve()

    config = property(lambda self: self.path / "config.json")
    manifest = property(lambda self: self.path / "manifest.json")
    daemons = property(lambda self: self.path / "daemons.json")
    supervisor_pid = property(lambda self: self.path / "supervisor.pid")
    supervisor_start = property(lambda self: self.path / "supervisor.start")
    state = property(lambda self: self.path / "state")
    logs = property(lambda self: self.path / "logs")
    broker = property(lambda self: self.path / "broker")
    network = property(lambda self: self.path / "network")

    @property
    def control_socket(self) -> Path:
        path = self.path / "control.sock"
        if len(str(path)) < 100:   # a Unix socket path has room for 107 bytes
            return path
        digest = hashlib.sha1(str(self.path).encode()).hexdigest()[:16]
        return Path(tempfile.gettempdir()) / f"clustertwin-{digest}.sock"

    def create(self) -> None:
        for d in (self.path, self.state, self.logs, self.broker):
            d.mkdir(parents=True, exist_ok=True)

    def read(self, file: Path) -> dict[str, Any]:
        try:
            return json.loads(file.read_text())
        except FileNotFoundError:
            raise RunDirError(f"{file} not found: is a twin running with --run-dir {self.path}?") from None
        except (OSError, json.JSONDecodeError) as e:
            raise RunDirError(f"{file}: unreadable ({e})") from None

    def load_manifest(self) -> Manifest:
        """The twin's manifest; RunDirError when there is none, ManifestError naming a bad field."""
        return Manifest.of(self.read(self.manifest))

    def running_supervisor(self) -> int | None:
        """The pid of this run directory's live supervisor, or None (also when the kernel has given
        the recorded pid to another process since: its start time differs)."""
        try:
            pid = int(self.supervisor_pid.read_text().strip())
            start = int(self.supervisor_start.read_text().strip())
        except (FileNotFoundError, ValueError):
            return None
        return pid if same_process(pid, start) else None

    def record_supervisor(self, pid: int) -> None:
        """Record the supervisor: its start time first, so a reader that finds the pid finds both."""
        self.supervisor_start.write_text(f"{start_time(pid)}\n")
        self.supervisor_pid.write_text(f"{pid}\n")

    def forget_supervisor(self) -> None:
        self.supervisor_pid.unlink(missing_ok=True)
        self.supervisor_start.unlink(missing_ok=True)


def write_json_atomic(path: Path, doc: Any) -> None:
    """Write JSON so that readers see the old file or the new one, never half of one."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(doc, f, indent=2, sort_keys=True)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def log_tail(path: Path, lines: int = 15, missing: str = "(no log)") -> str:
    """The last `lines` lines of a daemon's log, for an error message; `missing` if there is none."""
    try:
        return "\n".join(Path(path).read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return missing
