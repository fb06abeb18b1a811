"""The real subnet manager over a simulated fabric: ibsim, OpenSM (ftree) and infiniband-diags as
processes. The adapter between `FabricPlan` and `FabricState`; everything else is in pure modules.

How the pieces meet (Debian 12: apt-get install ibsim-utils opensm infiniband-diags):

- `ibsim -s NETFILE` holds the fabric. It listens on abstract-namespace unix datagram sockets
  `@<sockname>:ctl` and `@<sockname>:out0..9` (at most 10 clients at once); the sockname is taken
  from `IBSIM_SOCKNAME` (default "sim"), so each `Subnet` uses its own and several can run side by
  side. Its console reads commands from stdin: here a FIFO in the run directory (`ibsim.ctl`),
  which ibsim itself holds open for writing too, so it never sees end-of-file. Anyone may write
  commands into it (`Unlink "ib-leaf01"[57]`, `ReLink "ib-leaf01"[57]`, `Dump`, ...); ibsim's
  answers go to `ibsim.log`.
- OpenSM and the diags run under `ibsim-run`, which LD_PRELOADs libumad2sim: their umad calls go to
  ibsim. `SIM_HOST` picks the node they attach to: OpenSM the plan's SM node (a spine's embedded
  SM), the diags an HCA (`diag_node`, default the first server's mlx5_0), as an operator runs them
  from a host. Not from the spine: ftree gives a spine no route to the other spines (that would be
  a down-up turn), so LID-routed queries such as `ibroute` could not reach them from there.
  umad2sim makes a fake sysfs `./sys-<pid>` in the working directory: processes run in
  `<run>/work`, and `stop()` removes what a killed process left there.
- OpenSM runs `-R ftree -a <root GUIDs>` with a config file that forces log flushing (its log is
  buffered otherwise, and "SUBNET UP" would not be seen when it happens). Readiness and re-sweeps
  are read from its log: every completed heavy sweep ends with "SUBNET UP"; a link change arrives
  as "Received Generic Notice type:1 num:128 (Link state change)".
- Partitions: OpenSM re-reads partitions.conf on every heavy sweep, and SIGHUP starts one
  (`set_partitions`); `smpquery pkeys` reads a port's P_Key table back (`pkeys`).
- Port counters: ibsim's PMA answers `perfquery` (`port_counters`, `clear_counters` with -R) and its
  console `PerformanceSet` sets a PortCounters field (`set_counter`). ibsim counts MAD traffic only:
  no error counter moves by itself, not even LinkDownedCounter on Unlink, so `link_down` counts
  that one. (Its console `Error "node"[port] RATE` is a MAD *drop* rate, not a counter.)
- Routing after a fault: ftree recomputes every table, yet (measured, tests/fabric/
  test_fabric_subnet.py) only the two switches at the cable's ends change, and only entries of
  that cable's leaf-spine bundle: with two cables per pair (su-1024) exactly the entries that
  used the failed port, all onto the other cable; with eight (rack) the bundle's entries are
  re-spread over its seven remaining cables. No LID changes spine. `use_ucast_cache` cannot help:
  OpenSM drops its cache on a missing switch-to-switch link ("missing link to existing switch").
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from emulator.process import record, stop_process
from emulator.procutil import dies_with_parent, pid_alive
from services.fabric.counters import check_settable, parse_perfquery
from services.fabric.diags import (
    Discovery,
    build_state,
    parse_iblinkinfo,
    parse_ibnetdiscover,
    parse_ibroute,
    parse_pkeys,
)
from services.fabric.errors import FabricError
from services.fabric.model import FabricState, Port
from services.fabric.netfile import SWITCH, FabricPlan, render_netfile, render_root_guids
from services.fabric.partitions import Partition, render_partitions_conf, validate_partitions

TOOLS = ("ibsim", "ibsim-run", "opensm", "ibnetdiscover", "iblinkinfo", "ibroute", "smpquery", "perfquery")
APT_PACKAGES = ("ibsim-utils", "opensm", "infiniband-diags")
SUBNET_UP = "SUBNET UP"
TRAP_128 = "num:128"
POLL = 0.01
LINK_DOWNED_MAX = 255
TRAP_PATIENCE_S = 2.0  # a trap's re-sweep takes 20-60 ms here; past this, OpenSM ignored the trap
DIAG_WORKERS = 6  # concurrent diags: ibsim serves at most 10 clients; OpenSM is one, `twin ib exec` users more


class SubnetError(FabricError):
    """The subnet manager or the simulator failed; the message names which and quotes its log."""

    code = "UNAVAILABLE"
    what = "subnet manager"


def missing_tools() -> list[str]:
    return [t for t in TOOLS if shutil.which(t) is None]


@dataclass(frozen=True)
class Resweep:
    """A re-sweep OpenSM completed after a change: seconds from the change to "SUBNET UP"."""

    seconds: float
    trap_128: bool  # OpenSM logged the link-state-change trap


class Subnet:
    """One ibsim + OpenSM pair over `plan`, with its files under `run_dir`."""

    def __init__(self, plan: FabricPlan, run_dir: Path, sockname: str | None = None,
                 diag_node: str | None = None) -> None:
        self.plan = plan
        self.diag_node = diag_node or plan.hcas[0].id
        self.sm_node = plan.sm_node   # where OpenSM attaches; `move_sm` changes it
        self.run_dir = Path(run_dir)
        self.sockname = sockname or f"ct-{uuid.uuid4().hex[:10]}"
        self.netfile = self.run_dir / "fabric.net"
        self.root_guids = self.run_dir / "root_guids.conf"
        self.osm_conf = self.run_dir / "opensm.conf"
        self.partitions = self.run_dir / "partitions.conf"
        self.ctl = self.run_dir / "ibsim.ctl"
        self.ibsim_log = self.run_dir / "ibsim.log"
        self.osm_log = self.run_dir / "opensm.log"
        self.osm_out = self.run_dir / "opensm.out"
        self.cache = self.run_dir / "cache"
        self.work = self.run_dir / "work"
        self._ibsim: subprocess.Popen[bytes] | None = None
        self._opensm: subprocess.Popen[bytes] | None = None
        self.records: dict[str, dict[str, int | None]] = {}   # "ibsim"/"opensm" -> {"pid", "start"}
        self.started_at: dict[str, float] = {}                 # ... -> time.monotonic() at its start
        self._diags: set[subprocess.Popen[bytes]] = set()   # running infiniband-diags, killed by stop()
        self._diags_lock = threading.Lock()
        self._stopping = False
        self._ctl_fd: int | None = None
        self._discovery: Discovery | None = None   # the last full ibnetdiscover
        self._unlinked: set[frozenset[tuple[str, int]]] = set()   # cables taken down with link_down
        self._partitions: list[Partition] = []
        self._link_downs: dict[tuple[str, int], int] = {}  # LinkDownedCounter as last set in ibsim

    # --- lifecycle ---------------------------------------------------------------------------

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in (self._ibsim, self._opensm) if p is not None]

    @property
    def sm_running(self) -> bool:
        """Whether OpenSM (started by this Subnet) is still running."""
        return self._opensm is not None and self._opensm.poll() is None

    def dead(self) -> list[str]:
        """Which of ibsim and OpenSM, started and not stopped, have exited ("ibsim", "opensm")."""
        procs = (("ibsim", self._ibsim), ("opensm", self._opensm))
        return [name for name, p in procs if p is not None and not self._stopping and p.poll() is not None]

    def start(self, timeout: float = 30.0) -> float:
        """Write the files, start ibsim, then OpenSM; return seconds from OpenSM's start to its
        first "SUBNET UP". Raises SubnetError (and leaves nothing running) on failure."""
        missing = missing_tools()
        if missing:
            raise SubnetError(f"missing {', '.join(missing)}: apt-get install {' '.join(APT_PACKAGES)}")
        self._stopping = False
        try:
            self._link_downs.clear()  # a new ibsim counts from zero, with every cable up
            self._unlinked.clear()
            self._write_files()
            self._start_ibsim(timeout)
            return self._start_opensm(timeout)
        except BaseException:
            self.stop()
            raise

    def stop(self, timeout: float = 10.0) -> None:
        """Stop OpenSM, then ibsim (SIGTERM, then SIGKILL after `timeout`: emulator/process.py, by
        their recorded pid and start time); nothing is left. A diag still running is killed first:
        without ibsim it would wait for MADs forever."""
        with self._diags_lock:
            self._stopping = True
        self.kill_diags()
        self._stop("opensm", timeout)
        self._stop("ibsim", timeout)
        if self._ctl_fd is not None:
            os.close(self._ctl_fd)
            self._ctl_fd = None
        for leftover in self.work.glob("sys-*") if self.work.exists() else ():
            pid = leftover.name.removeprefix("sys-")
            if not (pid.isdigit() and pid_alive(int(pid))):
                shutil.rmtree(leftover, ignore_errors=True)

    def kill_diags(self) -> None:
        """End the diags running now (each fails with SubnetError): with ibsim gone they would wait
        for their MADs until their timeout."""
        with self._diags_lock:
            for diag in self._diags:
                diag.kill()

    def _stop(self, name: str, timeout: float) -> None:
        proc = self._opensm if name == "opensm" else self._ibsim
        rec = self.records.pop(name, None)
        if proc is not None and rec is not None:
            stop_process(proc.pid, timeout, start=rec["start"])
            proc.poll()   # reaped by stop_process: Popen takes the exit as it finds it
        if name == "opensm":
            self._opensm = None
        else:
            self._ibsim = None

    def move_sm(self, node: str, timeout: float = 30.0) -> float:
        """OpenSM on switch `node` instead (its switch is about to lose every cable, as a standby SM
        elsewhere takes over as master); the same LIDs (its cache). Seconds to its first sweep."""
        if node not in self.plan.nodes or self.plan.nodes[node].kind != SWITCH:
            raise KeyError(f"no switch {node!r} in the {self.plan.topology} fabric")
        self.sm_node = node
        return self.restart_opensm(timeout)

    def restart_opensm(self, timeout: float = 30.0) -> float:
        """OpenSM again over the running ibsim (after it died): the same files, a fresh log (an old
        "SUBNET UP" must not pass for the new one's). Seconds to its first sweep."""
        self._stop("opensm", timeout)
        for old in (self.osm_log, self.osm_out):
            old.unlink(missing_ok=True)
        return self._start_opensm(timeout)

    def __enter__(self) -> Subnet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _write_files(self) -> None:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.cache.mkdir(exist_ok=True)
        self.work.mkdir(exist_ok=True)
        self.netfile.write_text(render_netfile(self.plan))
        self.root_guids.write_text(render_root_guids(self.plan))
        self.partitions.write_text(render_partitions_conf(self._partitions))
        self.osm_conf.write_text(
            "routing_engine ftree\n"
            f"root_guid_file {self.root_guids}\n"
            f"log_file {self.osm_log}\n"
            "force_log_flush TRUE\n"
            "accum_log_file FALSE\n"
            f"dump_files_dir {self.work}/\n"
            f"partition_config_file {self.partitions}\n"
        )
        for stale in (self.ctl, self.osm_log, self.osm_out, self.ibsim_log):
            stale.unlink(missing_ok=True)  # an old "SUBNET UP" must not pass for a new one
        os.mkfifo(self.ctl, 0o600)

    def _env(self, host: str | None = None) -> dict[str, str]:
        env = dict(os.environ, IBSIM_SOCKNAME=self.sockname, OSM_CACHE_DIR=str(self.cache),
                   OSM_TMP_DIR=str(self.cache))
        env["SIM_HOST"] = host or self.sm_node
        return env

    def _start_ibsim(self, timeout: float) -> None:
        listening = f"@{self.sockname}:ctl"
        if _unix_socket_bound(listening):
            raise SubnetError(f"ibsim socket {listening} is already in use (another fabric runs with "
                              f"IBSIM_SOCKNAME={self.sockname})")
        # O_RDWR: ibsim's stdin is a FIFO with a writer that lives as long as ibsim does.
        self._ctl_fd = os.open(self.ctl, os.O_RDWR)
        with open(self.ibsim_log, "wb") as log:
            self._ibsim = subprocess.Popen(
                dies_with_parent(["ibsim", "-s", str(self.netfile)]), stdin=self._ctl_fd, stdout=log,
                stderr=subprocess.STDOUT, cwd=self.work, env=self._env())
        self.records["ibsim"], self.started_at["ibsim"] = record(self._ibsim.pid), time.monotonic()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._ibsim.poll() is not None:
                raise SubnetError(f"ibsim exited ({self._ibsim.returncode}): {_tail(self.ibsim_log)}")
            if _unix_socket_bound(listening):
                return
            time.sleep(POLL)
        raise SubnetError(f"ibsim did not listen on {listening} within {timeout:.0f} s: {_tail(self.ibsim_log)}")

    def _start_opensm(self, timeout: float) -> float:
        cmd = ["ibsim-run", "opensm", "-F", str(self.osm_conf), "-R", "ftree", "-a", str(self.root_guids),
               "-f", str(self.osm_log)]
        started = time.monotonic()
        with open(self.osm_out, "wb") as out:
            self._opensm = subprocess.Popen(dies_with_parent(cmd), stdin=subprocess.DEVNULL, stdout=out,
                                            stderr=subprocess.STDOUT, cwd=self.work, env=self._env())
        self.records["opensm"], self.started_at["opensm"] = record(self._opensm.pid), time.monotonic()
        self.wait_for_sweep(0, timeout)
        return time.monotonic() - started

    # --- OpenSM's log --------------------------------------------------------------------------

    def log_offset(self) -> int:
        try:
            return self.osm_log.stat().st_size
        except FileNotFoundError:
            return 0

    def wait_for_sweep(self, offset: int, timeout: float) -> bool:
        """Poll OpenSM's log past byte `offset` until a sweep completes ("SUBNET UP"); return
        whether a trap 128 was logged there first. Raises SubnetError on timeout or exit."""
        deadline = time.monotonic() + timeout
        while True:
            text = self._log_since(offset)
            if SUBNET_UP in text:
                return TRAP_128 in text.split(SUBNET_UP, 1)[0]
            if self._opensm is None or self._opensm.poll() is not None:
                raise SubnetError(f"OpenSM is not running: {_tail(self.osm_out)} {_tail(self.osm_log)}")
            if time.monotonic() >= deadline:
                raise SubnetError(f"OpenSM did not report {SUBNET_UP} within {timeout:.1f} s: {_tail(self.osm_log)}")
            time.sleep(POLL)

    def log_since(self, offset: int) -> str:
        """OpenSM's log past byte `offset` (see `log_offset`)."""
        return self._log_since(offset)

    def sweeps(self) -> int:
        return self._log_since(0).count(SUBNET_UP)

    def _log_since(self, offset: int) -> str:
        try:
            with open(self.osm_log, "rb") as f:
                f.seek(offset)
                return f.read().decode(errors="replace")
        except FileNotFoundError:
            return ""

    # --- ibsim's console -----------------------------------------------------------------------

    def command(self, line: str) -> None:
        """Send one console command to ibsim (its answer goes to ibsim.log)."""
        if self._ctl_fd is None or self._ibsim is None or self._ibsim.poll() is not None:
            raise SubnetError("ibsim is not running")
        os.write(self._ctl_fd, (line.strip() + "\n").encode())

    def unlinked(self, node: str, port: int) -> bool:
        """Whether the cable at `node`'s `port` is down in ibsim (taken down with `set_links`)."""
        peer = self.plan.peer(node, port)
        return peer is not None and frozenset({(node, port), peer}) in self._unlinked

    def _check_port(self, node: str, port: int) -> None:
        n = self.plan.nodes.get(node)
        if n is None:
            raise KeyError(f"no node {node!r} in the {self.plan.topology} fabric")
        if not 1 <= port <= n.ports or self.plan.peer(node, port) is None:
            raise KeyError(f"{node} port {port} has no cable")

    def link_down(self, node: str, port: int, timeout: float = 10.0) -> Resweep:
        """Take the cable at `node`'s `port` down (ibsim `Unlink`, both ends go Down/Polling and
        the switches raise trap 128); return when OpenSM has re-swept. Both ends count the
        link-down in LinkDownedCounter, as real ports do: ibsim does not, so it is told to."""
        return self.set_links([(node, port)], False, timeout)

    def set_links(self, ports: list[tuple[str, int]], up: bool, timeout: float = 10.0) -> Resweep:
        """Take the cables at these ports down (`Unlink`) or back up (`ReLink`) together, then wait
        for one re-sweep of OpenSM after the last of them. Every port is checked first (KeyError,
        nothing sent)."""
        for node, port in ports:
            self._check_port(node, port)
        offset = self.log_offset()
        t0 = time.monotonic()
        # Every link command first, in one write, the counters after: a re-sweep that a first trap
        # starts then sees as many of the changes as it can.
        self.command("\n".join(f'{"ReLink" if up else "Unlink"} "{node}"[{port}]' for node, port in ports))
        for node, port in ports:
            peer = self.plan.peer(node, port)
            assert peer is not None
            cable = frozenset({(node, port), peer})
            if up:
                self._unlinked.discard(cable)
            else:
                self._unlinked.add(cable)
                for end in ((node, port), peer):
                    self._count_link_down(*end)
        self._pick_diag_node()
        trap = self.await_sweep(offset, timeout)
        return Resweep(time.monotonic() - t0, trap)

    def await_sweep(self, offset: int, timeout: float) -> bool:
        """Wait for the re-sweep a change asks for; whether a trap 128 started it. OpenSM ignores a
        trap it has had more than 10 times from the same switch within its aging window
        (osm_trap_rcv.c, "trap storm" suppression), as after ten cable changes on one switch in
        a few seconds: the change would wait for the next periodic sweep (10 s). So if no sweep
        follows the traps soon, the SM is asked for one with SIGHUP, as an operator would."""
        try:
            return self.wait_for_sweep(offset, min(TRAP_PATIENCE_S, timeout))
        except SubnetError:
            if not self.sm_running or timeout <= TRAP_PATIENCE_S:
                raise
        self.resweep(timeout - TRAP_PATIENCE_S)
        return TRAP_128 in self._log_since(offset)

    def resweep(self, timeout: float = 10.0) -> None:
        """Ask OpenSM for a heavy sweep now (SIGHUP) and wait until it is done."""
        if not self.sm_running or self._opensm is None:
            raise SubnetError("OpenSM is not running")
        offset = self.log_offset()
        self._opensm.send_signal(signal.SIGHUP)
        self.wait_for_sweep(offset, timeout)

    def _pick_diag_node(self) -> None:
        """The diags attach to an HCA and reach the switches by LID, over OpenSM's ftree routes: keep
        it one from which every switch is reachable now (an operator walks to another host). Ftree
        routes only up then down: from an HCA's leaf to a spine it has a cable up to, and through
        such a spine to the other leaves under it. A leaf with every cable to one spine down cannot
        reach that spine at all, so no HCA under it can read its LFT (`ibroute` fails)."""
        if self._reach(self.diag_node) < len(self.plan.switches):
            self.diag_node = max((h.id for h in self.plan.hcas), key=self._reach)

    def _reach(self, hca: str) -> int:
        """How many switches an HCA reaches by LID routing with the cables down now."""
        leaf_end = self.plan.peer(hca, 1)
        if leaf_end is None or frozenset({(hca, 1), leaf_end}) in self._unlinked:
            return 0
        up: dict[str, set[str]] = {}   # switch -> the switches it has a cable up to
        for c in self.plan.cables:
            if c.kind == "leaf-spine" and frozenset({(c.a, c.a_port), (c.b, c.b_port)}) not in self._unlinked:
                up.setdefault(c.a, set()).add(c.b)
                up.setdefault(c.b, set()).add(c.a)
        leaf = leaf_end[0]
        spines = up.get(leaf, set())
        leaves = {lf for s in spines for lf in up.get(s, set())}
        return len({leaf} | spines | leaves)

    def _count_link_down(self, node: str, port: int) -> None:
        """LinkDownedCounter + 1 (an 8-bit counter: it stops at 255, as IBA counters do). The
        count is kept here, not read back: the far end of a downed HCA cable cannot be queried."""
        count = min(self._link_downs.get((node, port), 0) + 1, LINK_DOWNED_MAX)
        self.set_counter(node, port, "LinkDownedCounter", count)

    def link_up(self, node: str, port: int, timeout: float = 10.0) -> Resweep:
        """Restore a cable taken down with `link_down` (ibsim `ReLink`)."""
        return self.set_links([(node, port)], True, timeout)

    def _check_node_port(self, node: str, port: int) -> int:
        """The GUID that addresses `node`'s `port` (a switch's port 0 GUID, an HCA's port GUID)."""
        n = self.plan.nodes.get(node)
        if n is None:
            raise KeyError(f"no node {node!r} in the {self.plan.topology} fabric")
        if not 1 <= port <= n.ports:
            raise KeyError(f"{node} has no port {port} (ports 1-{n.ports})")
        return n.port_guid(0 if n.kind == SWITCH else port)

    def _console(self, command: str, done: str, timeout: float) -> str:
        """Send a console command and return ibsim's answer: the log line containing `done`.
        Raises SubnetError with ibsim's own complaint (a line starting with '#') instead."""
        try:
            offset = self.ibsim_log.stat().st_size
        except FileNotFoundError:
            offset = 0
        self.command(command)
        deadline = time.monotonic() + timeout
        while True:
            with open(self.ibsim_log, "rb") as f:
                f.seek(offset)
                for line in f.read().decode(errors="replace").splitlines():
                    answer = line.removeprefix("sim> ").strip()
                    if done in answer:
                        return answer
                    if answer.startswith("#"):
                        raise SubnetError(f"ibsim refused {command!r}: {answer}")
            if time.monotonic() >= deadline:
                raise SubnetError(f"ibsim did not answer {command!r} within {timeout:.1f} s: {_tail(self.ibsim_log)}")
            time.sleep(POLL)

    # --- partitions ----------------------------------------------------------------------------

    @property
    def partition_list(self) -> list[Partition]:
        """The partitions OpenSM was last given (without the default partition)."""
        return list(self._partitions)

    def port_guids(self) -> set[int]:
        """Every end port that may be a partition member: HCA ports, switch port 0."""
        return {n.port_guid(p) for n in self.plan.nodes.values()
                for p in ((0,) if n.kind == SWITCH else range(1, n.ports + 1))}

    def set_partitions(self, partitions: list[Partition], timeout: float = 10.0) -> Resweep:
        """Make `partitions` (plus the default one) OpenSM's: validate them (PartitionError, and
        nothing changes), replace partitions.conf atomically, then SIGHUP OpenSM. A HUP starts a
        heavy sweep (opensm(8), NOTES), which re-reads partitions.conf and programs the P_Key
        tables before it logs "SUBNET UP"; return then. If a heavy sweep was already running when
        the signal came, the "SUBNET UP" seen may be that one's (OpenSM runs the HUP's after it)."""
        checked = validate_partitions(partitions, self.port_guids())
        if not self.sm_running or self._opensm is None:
            raise SubnetError("OpenSM is not running")
        tmp = self.partitions.with_name(self.partitions.name + ".tmp")
        tmp.write_text(render_partitions_conf(checked))
        os.replace(tmp, self.partitions)  # OpenSM never reads a half-written file
        self._partitions = checked[1:]
        offset = self.log_offset()
        t0 = time.monotonic()
        self._opensm.send_signal(signal.SIGHUP)
        self.wait_for_sweep(offset, timeout)
        return Resweep(time.monotonic() - t0, False)

    def pkeys(self, node: str, port: int = 1) -> list[tuple[int, bool]]:
        """The P_Key table of `node`'s `port` as the port holds it (`smpquery pkeys`, addressed by
        GUID: the SA resolves the LID): [(P_Key, full member)], e.g. [(0x7fff, True), (0x2, False)].
        A switch port facing an HCA carries its HCA's keys (OpenSM's partition enforcement)."""
        guid = self._check_node_port(node, port)
        return parse_pkeys(self.diag("smpquery", "-G", "pkeys", f"{guid:#x}", str(port)))

    # --- port counters -------------------------------------------------------------------------

    def port_counters(self, node: str, port: int) -> dict[str, int]:
        """`node`'s `port`'s PortCounters as `perfquery -G GUID PORT` reads them from ibsim's PMA:
        {"SymbolErrorCounter": 0, ..., "PortXmitData": 1368, ...}, perfquery's field names."""
        guid = self._check_node_port(node, port)
        return parse_perfquery(self.diag("perfquery", "-G", f"{guid:#x}", str(port)))

    def set_counter(self, node: str, port: int, name: str, value: int, timeout: float = 5.0) -> None:
        """Set one PortCounters field of `node`'s `port` in ibsim (console `PerformanceSet`), as a
        faulty cable would have counted it; return when ibsim has confirmed it. CounterError for a
        field ibsim cannot set or a value wider than the field, KeyError for a bad node/port."""
        check_settable(name, value)
        self._check_node_port(node, port)
        self._console(f'PerformanceSet "{node}"[{port}] PortCounters.{name}={value}',
                      f"PortCounters.{name} has been set to", timeout)
        if name == "LinkDownedCounter":
            self._link_downs[(node, port)] = value

    def clear_counters(self, node: str, port: int) -> None:
        """Reset all of `node`'s `port`'s PortCounters to zero (`perfquery -R`, as an operator
        clears them after fixing a cable)."""
        guid = self._check_node_port(node, port)
        self.diag("perfquery", "-R", "-G", f"{guid:#x}", str(port))
        self._link_downs.pop((node, port), None)

    # --- infiniband-diags ----------------------------------------------------------------------

    def diag(self, tool: str, *args: str, timeout: float = 60.0) -> str:
        """Run one infiniband-diags tool against the fabric; its standard output."""
        cmd = dies_with_parent(["ibsim-run", tool, *args])
        with self._diags_lock:
            if self._stopping:
                raise SubnetError(f"{tool}: the subnet is stopping")
            if self._ibsim is None or self._ibsim.poll() is not None:   # it would wait for MADs until its timeout
                raise SubnetError(f"{tool}: ibsim is not running")
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=self.work,
                                    env=self._env(self.diag_node))
            self._diags.add(proc)
        try:
            out, err_bytes = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired as e:
            proc.kill()
            proc.communicate()
            raise SubnetError(f"{tool} {' '.join(args)} took more than {timeout:.0f} s") from e
        finally:
            with self._diags_lock:
                self._diags.discard(proc)
        if proc.returncode != 0:
            err = err_bytes.decode(errors="replace").strip().splitlines()[-3:]
            raise SubnetError(f"{tool} {' '.join(args)} failed ({proc.returncode}): {' | '.join(err)}")
        return out.decode(errors="replace")

    def lft(self, switch_lid: int) -> dict[int, int]:
        """A switch's linear forwarding table as `ibroute` reads it: {LID: out port}. `-n`: the
        destinations are not resolved (that costs a NodeDesc query per LID)."""
        return parse_ibroute(self.diag("ibroute", "-n", str(switch_lid)))[2]

    def snapshot(self, reuse_discovery: bool = False) -> FabricState:
        """The fabric as the diags read it now: ibnetdiscover, iblinkinfo -l, ibroute per switch.

        `reuse_discovery`: after a cable change, reuse the systems and cabling of the last full
        discovery (a cable going down or up changes neither which boxes exist nor their LIDs; the
        port states say what is up) and read only the port states and the LFTs again, all at once."""
        if not reuse_discovery or self._discovery is None:
            self._discovery = parse_ibnetdiscover(self.diag("ibnetdiscover"))
        lids = [s.lid for s in self._discovery.systems.values() if s.lid]
        ports, lfts = self._read_ports_and_lfts(lids)
        return build_state(self._discovery, ports, lfts)

    def refresh(self, previous: FabricState, switches: list[str]) -> FabricState:
        """`previous` with the port states read again and the LFTs of `switches` (node ids) read
        again, the other switches' tables kept: what a cable change touches first (on ftree, the
        two switches at its ends). The fabric manager answers from this at once and reads every
        table again behind it (`snapshot`)."""
        if self._discovery is None:
            return self.snapshot()
        guids = {n.id: n.guid for n in self.plan.switches}
        lids = [previous.systems[guids[s]].lid for s in switches if guids.get(s) in previous.systems]
        ports, lfts = self._read_ports_and_lfts([lid for lid in lids if lid])
        return build_state(self._discovery, ports, {**previous.lfts, **lfts})

    def _read_ports_and_lfts(self, switch_lids: list[int]) -> tuple[list[Port], dict[int, dict[int, int]]]:
        """iblinkinfo and one ibroute per switch LID, run side by side."""
        with ThreadPoolExecutor(DIAG_WORKERS) as pool:
            linkinfo = pool.submit(self.diag, "iblinkinfo", "-l")
            tables = list(pool.map(lambda lid: parse_ibroute(self.diag("ibroute", "-n", str(lid))), switch_lids))
            ports = parse_iblinkinfo(linkinfo.result())
        return ports, {guid: lft for guid, _, lft in tables}


def _unix_socket_bound(name: str) -> bool:
    """Whether an abstract unix socket `@name` is bound (in this network namespace). ibsim binds
    the whole sun_path, so /proc shows the name's trailing NULs as '@' too."""
    return any(line.rsplit(" ", 1)[-1].rstrip("@") == name
               for line in Path("/proc/net/unix").read_text(errors="replace").splitlines())


def _tail(path: Path, lines: int = 5) -> str:
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except FileNotFoundError:
        return f"({path.name} not written)"
    return " | ".join(text[-lines:])
