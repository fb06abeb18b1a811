"""The real Slurm daemons for a twin: munged, slurmctld and one slurmd per GPU server, as processes.

Debian 12: `apt-get install slurm-wlm munge` (APT_PACKAGES). Everything lives in one directory:

    slurm.conf gres.conf            rendered by services.slurm.config
    munge/ munge.key munge.socket   a private munged (own key and socket; AuthInfo=socket=...)
    state/ spool/<node>/ run/ log/  slurmctld state, slurmd spools, pid files, logs
    jobs/                           working directory of client commands (slurm-N.out)
    dev/<node>/...                  fake device files gres.conf points at

All daemons run in the foreground (`-D`, `-F`) as children of this process, on 127.0.0.1 with
distinct ports, or, when the config names network namespaces (a `--network netns` twin),
slurmctld and each slurmd inside theirs (`nsenter --net=/run/netns/NAME`, which execs the daemon:
the child's pid is the daemon's); munged stays here, its socket is a file every namespace sees.
Client commands (`sinfo`, `sbatch`, ...) find the cluster via `SLURM_CONF`:
`cluster.env()` or `cluster.run("sinfo", ...)`.

Every daemon starts inside the cluster's own cgroup (emulator.process.Cgroup, its path recorded in
`cgroup`), so whatever they spawn stays in it: slurmstepd and the job tasks start sessions of their
own and leave slurmd's process tree. `stop()` cancels the jobs (scancel), stops the daemons by their
pids, then kills what is left in the cgroup, so nothing is left behind. Without a writable cgroup v2
hierarchy only the scancel and the daemons' pids remain: a step that outlives them is not found.
"""

from __future__ import annotations

import hashlib
import logging
import os
import random
import shutil
import socket
import stat
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from emulator.errors import UserError
from emulator.process import Cgroup, stop_processes
from emulator.procutil import dies_with_parent, pid_alive
from emulator.topology import Topology
from services.slurm.config import SlurmConfig, make_config, render_gres_conf, render_slurm_conf

APT_PACKAGES = ("slurm-wlm", "munge")
CLIENTS = ("sinfo", "squeue", "sbatch", "srun", "scontrol", "scancel")
POLL = 0.2
log = logging.getLogger("slurm")
SLURMCTLD_GRACE_S = 3.0  # stop(): slurmctld's time to exit after SIGTERM (see stop)
CANCEL_WAIT_S = 8.0  # stop(): how long cancelled jobs may take to leave the queue
PORT_FLOOR = 10000  # slurmctld and slurmd ports are drawn from [PORT_FLOOR, ephemeral range)
NVIDIA_MAJOR = 195   # the character-device major of /dev/nvidia0..N


def _device_node(path: Path, minor: int) -> None:
    """A GRES `File=` as the driver's device node: slurmd's gres/gpu skips a File= that is not a
    character or block device ("fix your gres.conf"), and a job then gets no CUDA_VISIBLE_DEVICES.
    Nothing opens it (without the driver an open fails with ENXIO). Without CAP_MKNOD: an empty
    file, and jobs see no CUDA_VISIBLE_DEVICES."""
    if path.exists() and stat.S_ISCHR(path.stat().st_mode):
        return
    path.unlink(missing_ok=True)
    try:
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(NVIDIA_MAJOR, minor))
    except PermissionError:
        log.warning("cannot create device node %s (no CAP_MKNOD): slurm jobs get no CUDA_VISIBLE_DEVICES", path)
        path.touch()


class SlurmError(UserError, RuntimeError):
    """A Slurm daemon failed to start or the cluster did not come up; the message quotes logs."""


def missing_tools(auth: str = "munge") -> list[str]:
    need = ["slurmctld", "slurmd", *CLIENTS] + (["munged", "mungekey"] if auth == "munge" else [])
    found = [t for t in need if shutil.which(t) or Path("/usr/sbin", t).exists()]
    return [t for t in need if t not in found]


def _tool(name: str) -> str:
    return shutil.which(name) or str(Path("/usr/sbin") / name)


def free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """`count` distinct ports free right now, below the kernel's ephemeral range.

    slurmd binds its port only after start-up; a port from the ephemeral range (what binding port
    0 gives) can meanwhile become the source port of any outgoing connection on a busy machine
    (seen with su-1024's 128 slurmd: "Unable to bind listen port"). Below the range only another
    listener can take it."""
    low = _ephemeral_low()
    candidates = list(range(PORT_FLOOR, low))
    random.shuffle(candidates)
    ports: list[int] = []
    for port in candidates:
        with socket.socket() as s:
            try:
                s.bind((host, port))
            except OSError:
                continue
        ports.append(port)
        if len(ports) == count:
            return ports
    raise SlurmError(f"not {count} free ports between {PORT_FLOOR} and {low} on {host}")


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def in_netns(name: str, argv: list[str]) -> list[str]:
    """`argv` run in the network namespace /run/netns/NAME (only that: same mounts, same pids).
    nsenter execs `argv` in place, so the pid Popen returns is the program's."""
    return [shutil.which("nsenter") or "nsenter", f"--net=/run/netns/{name}", "--", *argv]


class SlurmCluster:
    """Slurm for `topo`'s GPU servers, its files under `directory`."""

    def __init__(self, topo: Topology, directory: Path, *, auth: str = "munge",
                 config: SlurmConfig | None = None) -> None:
        self.directory = Path(directory).resolve()
        if config is None:
            ports = free_ports(1 + len(topo.gpu_servers))
            config = make_config(topo, self.directory, hostname=socket.gethostname(),
                                 ctld_port=ports[0], slurmd_ports=ports[1:], auth=auth)
        self.config = config
        self.conf_path = self.directory / "slurm.conf"
        self.procs: dict[str, subprocess.Popen] = {}
        self.cgroup: Cgroup | None = None

    # -- files -------------------------------------------------------------------------------

    def write_files(self) -> None:
        d = self.directory
        for sub in ("state", "run", "log", "munge", "jobs"):
            (d / sub).mkdir(parents=True, exist_ok=True)
        for node in self.config.node_names:
            (d / "spool" / node).mkdir(parents=True, exist_ok=True)
        for node in self.config.nodes:
            for minor, f in enumerate(self.config.device_files(node.name)):
                f.parent.mkdir(parents=True, exist_ok=True)
                _device_node(f, minor)
        self.conf_path.write_text(render_slurm_conf(self.config))
        (d / "gres.conf").write_text(render_gres_conf(self.config))

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["SLURM_CONF"] = str(self.conf_path)
        for k in [k for k in env if k.startswith(("SLURM_", "SBATCH_", "SRUN_", "SQUEUE_"))]:
            if k != "SLURM_CONF":
                del env[k]
        return env

    def run(self, *argv: str, check: bool = True, timeout: float = 30,
            input: str | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
        """A Slurm client command against this cluster, run in `cwd` (default: the cluster's
        `jobs/` directory, so batch jobs' default slurm-N.out land there, not in the caller's)."""
        return subprocess.run([_tool(argv[0]), *argv[1:]], env=self.env(), capture_output=True,
                              text=True, check=check, timeout=timeout, input=input,
                              cwd=cwd or self.directory / "jobs")

    # -- lifecycle ---------------------------------------------------------------------------

    def _spawn(self, key: str, argv: list[str], netns: str | None = None) -> None:
        log = open(self.directory / "log" / f"{key}.out", "ab")
        if netns:
            argv = in_netns(netns, argv)
        if self.cgroup is not None:
            argv = self.cgroup.wrap(argv)
        self.procs[key] = subprocess.Popen(dies_with_parent(argv), env=self.env(), stdout=log,
                                           stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=self.directory)
        log.close()

    def _start_munge(self, timeout: float) -> None:
        m = self.directory / "munge"
        os.chmod(m, 0o700)
        key = m / "munge.key"
        if not key.exists():
            subprocess.run([_tool("mungekey"), "--create", f"--keyfile={key}"], check=True,
                           capture_output=True)
        os.chmod(key, 0o600)
        sock = self.config.munge_socket
        sock.unlink(missing_ok=True)   # a killed munged's: waiting for the file must wait for this one
        self._spawn("munged", [_tool("munged"), "--foreground", "--force", f"--socket={sock}",
                               f"--key-file={key}", f"--pid-file={m / 'munged.pid'}",
                               f"--log-file={m / 'munged.log'}", f"--seed-file={m / 'munged.seed'}"])
        self._wait(lambda: sock.exists(), timeout, "munged did not create its socket",
                   m / "munged.log", "munged")

    def start(self, timeout: float = 60, ready: Callable[[dict[str, str]], bool] | None = None,
              recover: bool = False) -> None:
        """Write the files, start every daemon, return when `sinfo` shows every node idle (or,
        given `ready`, when it accepts the node → state map: a health check may drain some).
        `recover`: the cluster of this directory comes back after its daemons were killed: slurmctld
        recovers its saved state (no -c) and the job steps still in the cgroup are left running."""
        if self.procs:
            raise SlurmError("already started")
        missing = missing_tools(self.config.auth)
        if missing:
            raise SlurmError(f"missing {', '.join(missing)}: apt-get install {' '.join(APT_PACKAGES)}")
        deadline = time.monotonic() + timeout
        self.write_files()
        self.cgroup = self._make_cgroup(keep=recover)
        try:
            if self.config.auth == "munge":
                self._start_munge(deadline - time.monotonic())
            clear = [] if recover else ["-c"]
            self._spawn("slurmctld", [_tool("slurmctld"), "-D", *clear, "-i", "-f", str(self.conf_path)],
                        self.config.ctld_netns)
            for node in self.config.nodes:
                self._spawn(f"slurmd-{node.name}",
                            [_tool("slurmd"), "-D", "-N", node.name, "-f", str(self.conf_path)], node.netns)
            check = self._all_idle if ready is None else (lambda: ready(self.node_states()))
            what = f"not every node became {'ready' if ready else 'idle'}"
            self._wait(check, deadline - time.monotonic(), what, self.directory / "log" / "slurmctld.log",
                       None)
        except BaseException:
            self.stop()
            raise

    def _make_cgroup(self, keep: bool = False) -> Cgroup | None:
        """This cluster's cgroup, named after its directory, recorded in `cgroup` for `twin slurm down`;
        what a previous cluster of this directory left in it is killed, unless `keep` (its steps)."""
        cgroup = Cgroup.create("slurm-" + hashlib.sha1(str(self.directory).encode()).hexdigest()[:12])
        if cgroup is None:
            log.warning("no writable cgroup v2 hierarchy: job steps that outlive slurmd cannot be found")
            return None
        if not keep:
            cgroup.kill()   # a previous cluster of this directory that was itself killed
        cgroup.save(self.directory / "cgroup")
        return cgroup

    def _wait(self, ready, timeout: float, what: str, log: Path, proc: str | None) -> None:
        end = time.monotonic() + max(timeout, 0)
        while True:
            for key, p in self.procs.items():
                if p.poll() is not None:
                    raise SlurmError(f"{key} exited with {p.returncode} while waiting: {what}\n"
                                     + self._tail(self.directory / "log" / f"{key}.out")
                                     + self._tail(log))
            if ready():
                return
            if time.monotonic() > end:
                extra = ""
                try:
                    extra = self.run("sinfo", "-N", "-o", "%N %T %E", check=False, timeout=5).stdout
                except subprocess.TimeoutExpired:
                    pass
                raise SlurmError(f"timed out: {what}\n{extra}" + self._tail(log))
            time.sleep(POLL)

    @staticmethod
    def _tail(path: Path, lines: int = 25) -> str:
        try:
            return f"--- {path}:\n" + "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) + "\n"
        except OSError:
            return ""

    def node_states(self) -> dict[str, str]:
        """Node name → sinfo state (idle, alloc, mixed, drain, down*, ...); {} if not answering."""
        try:
            r = self.run("sinfo", "-h", "-N", "-o", "%N %T", check=False, timeout=5)
        except subprocess.TimeoutExpired:
            return {}
        if r.returncode:
            return {}
        return dict(line.split()[:2] for line in r.stdout.splitlines() if line.strip())

    def _all_idle(self) -> bool:
        states = self.node_states()
        return bool(states) and all(states.get(n) == "idle" for n in self.config.node_names)

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self.procs.values()]

    def stop(self, timeout: float = 15) -> None:
        """Cancel jobs, stop every daemon (TERM, then KILL), kill what is left in the cgroup; idempotent."""
        if not self.procs and self.cgroup is None:
            return
        ctld = self.procs.get("slurmctld")
        if ctld is not None and ctld.poll() is None:
            try:
                self.run("scancel", "--full", "-u", "root", check=False, timeout=5)
                # Let the cancelled steps report to slurmctld while it and munged still run: a
                # slurmstepd that cannot (netns: seen to hold its slurmd ~15 s) delays the stop.
                end = time.monotonic() + CANCEL_WAIT_S
                while time.monotonic() < end and self.run("squeue", "-h", check=False, timeout=5).stdout.strip():
                    time.sleep(POLL)
            except subprocess.TimeoutExpired:
                pass
        if self.cgroup is not None:
            # Steps still running now are ours to end: a slurmstepd that cannot report its end
            # (netns: seen to hold its slurmd's SIGTERM ~15 s) would otherwise delay the stop.
            self.cgroup.kill_except(self.pids)
        # One tier after the other: the slurmd, then slurmctld, then munged. After a netns chaos run
        # slurmctld logged "Saving all slurm state" and then waited out any grace on its RPC threads
        # ("_write_msg: read/write op failed"); its state is saved by then, so it gets a short one.
        tiers = (([k for k in self.procs if k.startswith("slurmd")], timeout),
                 (["slurmctld"], min(timeout, SLURMCTLD_GRACE_S)), (["munged"], timeout))
        for names, grace in tiers:
            stop_processes([self.procs[k].pid for k in names if k in self.procs], grace)
        for p in self.procs.values():
            p.poll()
        if self.cgroup is not None:
            self.cgroup.kill()   # slurmstepd and job tasks that outlived their slurmd
            self.cgroup.remove()
            (self.directory / "cgroup").unlink(missing_ok=True)
            self.cgroup = None
        self.procs.clear()

    def alive(self) -> list[int]:
        return [p for p in self.pids if pid_alive(p)]

    def __enter__(self) -> SlurmCluster:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
