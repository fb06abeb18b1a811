"""A throwaway PostgreSQL server for tests: initdb in a temp dir, 127.0.0.1 only, trust auth, always stopped.

    from tests.pg import PostgresServer, skip_reason

    @pytest.fixture(scope="module")
    def postgres() -> Iterator[PostgresServer]:
        if skip_reason():
            pytest.skip(skip_reason())
        with PostgresServer() as pg:
            yield pg          # pg.url (SQLAlchemy), pg.dsn (psycopg), pg.port, pg.log

PostgreSQL refuses to run as root: as root the server runs as the `postgres` system user (its data
directory is a fresh temp dir owned by that user); as anyone else it runs as the current user.
The binaries come from $PG_BIN, else the newest /usr/lib/postgresql/*/bin, else $PATH.
Readiness is polled (a real connection, not a fixed sleep); stop() shuts it down fast, then
immediately, then kills it, and removes the data directory.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

PG_USER = "postgres"          # the system user the server runs as when we are root
DB_USER = "postgres"          # the database superuser initdb creates
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 15.0


def find_bin_dir() -> Path | None:
    """The directory holding initdb and postgres, or None."""
    candidates: list[Path] = []
    if os.environ.get("PG_BIN"):
        candidates.append(Path(os.environ["PG_BIN"]))

    def version(p: Path) -> tuple[int, ...]:
        try:
            return tuple(int(x) for x in p.parent.name.split("."))
        except ValueError:
            return (0,)

    candidates += sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=version, reverse=True)
    on_path = shutil.which("initdb")
    if on_path:
        candidates.append(Path(on_path).parent)
    for d in candidates:
        if (d / "initdb").is_file() and (d / "postgres").is_file():
            return d
    return None


def skip_reason() -> str:
    """Why a real PostgreSQL cannot be started here ('' if it can)."""
    if find_bin_dir() is None:
        return ("PostgreSQL server binaries (initdb, postgres) not found in $PG_BIN, /usr/lib/postgresql/*/bin "
                "or $PATH (apt-get install postgresql)")
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(PG_USER)
        except KeyError:
            return f"running as root and there is no {PG_USER!r} system user for PostgreSQL to run as"
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg is not installed (pip install 'psycopg[binary]')"
    return ""


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostgresError(RuntimeError):
    pass


class PostgresServer:
    """One PostgreSQL cluster in a temp dir; a context manager (start on enter, stop on exit)."""

    def __init__(self, database: str = "twin") -> None:
        self.database = database
        self.bin_dir = find_bin_dir()
        self.root: Path | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0
        self._as_user = PG_USER if os.geteuid() == 0 else None

    # addresses
    @property
    def dsn(self) -> str:
        """For psycopg.connect()."""
        return f"host=127.0.0.1 port={self.port} user={DB_USER} dbname={self.database} connect_timeout=5"

    @property
    def url(self) -> str:
        """For SQLAlchemy (and `store_url`)."""
        return f"postgresql+psycopg://{DB_USER}@127.0.0.1:{self.port}/{self.database}"

    @property
    def data_dir(self) -> Path:
        assert self.root is not None
        return self.root / "data"

    @property
    def log(self) -> Path:
        assert self.root is not None
        return self.root / "postgres.log"

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except (OSError, AssertionError):
            return "(no log)"

    # lifecycle
    def _popen(self, args: list[str], **kw: object) -> subprocess.Popen[bytes]:
        assert self.root is not None
        user = {"user": self._as_user, "group": self._as_user, "extra_groups": []} if self._as_user else {}
        return subprocess.Popen(args, cwd=self.root, stdin=subprocess.DEVNULL,
                                env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C",
                                     "HOME": str(self.root)},
                                **user, **kw)  # type: ignore[call-overload]

    def start(self) -> PostgresServer:
        if self.bin_dir is None:
            raise PostgresError(skip_reason())
        self.root = Path(tempfile.mkdtemp(prefix="clustertwin-pg-"))
        try:
            if self._as_user:
                pw = pwd.getpwnam(self._as_user)
                os.chown(self.root, pw.pw_uid, pw.pw_gid)
            with open(self.log, "ab") as log:
                if self._as_user:
                    os.chown(self.log, pw.pw_uid, pw.pw_gid)
                init = self._popen([str(self.bin_dir / "initdb"), "-D", str(self.data_dir), "-U", DB_USER,
                                    "--auth=trust", "--no-sync", "--encoding=UTF8", "--no-instructions"],
                                   stdout=log, stderr=log)
                if init.wait(timeout=120) != 0:
                    raise PostgresError(f"initdb failed (exit {init.returncode}):\n{self.log_tail()}")
            # A free port can be taken between our probe and the server's bind: try a few.
            for _attempt in range(3):
                self.port = _free_port()
                if self._start_server():
                    break
            else:
                raise PostgresError(f"postgres did not start:\n{self.log_tail()}")
            self._create_database()
        except BaseException:
            self.stop()
            raise
        return self

    def _start_server(self) -> bool:
        import psycopg

        with open(self.log, "ab") as log:
            self.proc = self._popen(
                [str(self.bin_dir / "postgres"), "-D", str(self.data_dir), "-p", str(self.port),
                 "-c", "listen_addresses=127.0.0.1", "-c", f"unix_socket_directories={self.root}",
                 "-c", "fsync=off", "-c", "full_page_writes=off", "-c", "max_connections=200"],
                stdout=log, stderr=log, start_new_session=True)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:      # e.g. the port was taken after all
                self.proc = None
                return False
            try:
                psycopg.connect(f"host=127.0.0.1 port={self.port} user={DB_USER} dbname=postgres "
                                "connect_timeout=2").close()
                return True
            except psycopg.OperationalError:
                time.sleep(0.05)
        self._stop_server()
        raise PostgresError(f"postgres not accepting connections on port {self.port} within "
                            f"{START_TIMEOUT_S:.0f}s:\n{self.log_tail()}")

    def _create_database(self) -> None:
        import psycopg

        with psycopg.connect(f"host=127.0.0.1 port={self.port} user={DB_USER} dbname=postgres",
                             autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{self.database}"')

    def _stop_server(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        # SIGINT: fast shutdown (disconnect clients); SIGQUIT: immediate; SIGKILL last.
        for sig, wait in ((signal.SIGINT, STOP_TIMEOUT_S), (signal.SIGQUIT, 5.0), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(proc.pid, sig)    # its own session: the postmaster and its backends
            except ProcessLookupError:
                pass
            try:
                proc.wait(timeout=wait)
                return
            except subprocess.TimeoutExpired:
                continue

    def stop(self) -> None:
        self._stop_server()
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = None

    def __enter__(self) -> PostgresServer:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()
