"""The supervisor: one process per twin that starts every emulated daemon and keeps it running.

It imports every daemon's code once and then forks each daemon from itself (a zygote), so 128
GPU-server processes share the interpreter's pages and start in seconds. It never opens a gRPC
channel itself (gRPC does not survive fork once initialised); health is checked from outside by
`twin up` and `twin status`. A daemon that dies is forked again and resumes from its store. On
SIGTERM it stops the daemons (SIGTERM, then SIGKILL after a grace period) and the broker, and
removes its pid file. Children die with it if it is killed (PR_SET_PDEATHSIG).

Daemons that are no part of the plan (Slurm's: `twin slurm up`) are started and stopped on demand
through the control socket (`daemon.start`, `daemon.stop`); once started they are children like the
others (restarted with the same backoff, in daemons.json and in the manifest until stopped).

    python -m emulator.supervisor RUN_DIR
"""

from __future__ import annotations

import gc
import inspect
import logging
import os
import selectors
import signal
import sys
import time
from dataclasses import dataclass, field

from emulator import broker, bus
from emulator.addressing import acquire_slot
from emulator.control import ControlServer
from emulator.daemon_config import DaemonConfig
from emulator.manifest import DaemonEntry, Manifest, NetworkBackendInfo
from emulator.network.operator import OPERATOR_ADDRESS
from emulator.options import Options
from emulator.plan import NamespaceAddressing, make_plan
from emulator.process import Backoff, start_time, stop_process, stop_processes
from emulator.procutil import die_with_parent, enter_netns, set_process_name
from emulator.rundir import RunDir, write_json_atomic
from emulator.service import runner, typed
from emulator.topology import load_topology

log = logging.getLogger("supervisor")

STOP_GRACE_S = 5.0
CRASH_WINDOW_S = 10.0     # a daemon that dies sooner than this after its start counts as crash-looping
MAX_FAST_RESTARTS = 5


@dataclass
class Child:
    config: DaemonConfig
    pid: int = 0
    start: int | None = None     # the pid's start time (/proc/PID/stat), so teardown never signals a reused pid
    started_at: float = 0.0
    restarts: int = 0
    backoff: Backoff = field(default_factory=lambda: Backoff(CRASH_WINDOW_S, MAX_FAST_RESTARTS))
    state: str = "starting"      # starting | running | restarting | failed | stopped
    last_exit: str = ""
    next_start: float = 0.0
    on_demand: bool = False      # started through the control socket (daemon.start), not by the plan
    grace: float = STOP_GRACE_S  # SIGTERM to SIGKILL when it is stopped


class Supervisor:
    def __init__(self, run: RunDir) -> None:
        self.run = run
        self.children: dict[str, Child] = {}
        self.by_pid: dict[int, str] = {}
        self.stopping = False
        self.broker_proc = None
        self.broker_start: int | None = None
        self.slot = None
        self.network = None
        self.control: ControlServer | None = None
        self.manifest: Manifest | None = None

    # -- child processes ---------------------------------------------------------------------
    def fork(self, child: Child) -> None:
        pid = os.fork()
        if pid == 0:  # the daemon
            code = 0
            try:
                self._become_daemon(child.config, child.restarts)
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else 1
            except BaseException:
                logging.getLogger(child.config.name).exception("daemon crashed")
                code = 1
            finally:
                os._exit(code)
        child.pid, child.start, child.started_at, child.state = pid, start_time(pid), time.time(), "running"
        self.by_pid[pid] = child.config.name

    def _become_daemon(self, cfg: DaemonConfig, restarts: int) -> None:
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)
        die_with_parent()
        if self.slot is not None:
            self.slot.release()
        if cfg.netns:
            enter_netns(cfg.netns)   # the daemon lives in its emulated host, as the real one does
        set_process_name(f"twin:{cfg.name}")
        if cfg.log_file:
            fd = os.open(cfg.log_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            os.close(fd)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        logging.basicConfig(level=logging.INFO, force=True, stream=sys.stderr,
                            format=f"%(asctime)s {cfg.name} %(levelname)s %(name)s: %(message)s")
        # The zygote's objects stay frozen: a collection that walked them would copy every page
        # this daemon shares with its 127 siblings.
        announce_start(cfg, restarts)
        runner(cfg.kind)(cfg)

    def reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            name = self.by_pid.pop(pid, None)
            if name is None:
                continue  # the broker, or a child from before a restart
            child = self.children[name]
            why = (f"signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status) else f"exit {os.WEXITSTATUS(status)}")
            child.last_exit, child.pid, child.start = why, 0, None
            if self.stopping:
                child.state = "stopped"
                continue
            now = time.time()
            delay = child.backoff.delay(now - child.started_at)
            if delay is None:
                child.state = "failed"
                log.error("%s died (%s) %d times within %.0fs of starting; giving up", name, why,
                          child.backoff.fast, CRASH_WINDOW_S)
            else:
                child.state = "restarting"
                child.next_start = now + delay
                log.warning("%s died (%s); restarting", name, why)
            self.write_status()

    def start_due(self) -> None:
        """Fork what is due: a daemon that died, once its backoff is over, and one started on demand
        (forked here, not while its control request's connection is open: the child would hold it)."""
        now = time.time()
        for child in list(self.children.values()):
            if child.state == "restarting" and now >= child.next_start:
                child.restarts += 1
            elif child.state != "starting" or child.pid:
                continue
            self.fork(child)
            self.write_status()

    def write_status(self) -> None:
        write_json_atomic(self.run.daemons, {
            "supervisor": os.getpid(),
            "supervisor_start": start_time(os.getpid()),
            "slot": self.slot.slot if self.slot else None,
            "broker_pid": self.broker_proc.pid if self.broker_proc else None,
            "broker_start": self.broker_start,
            "updated_at": time.time(),
            "daemons": {n: {"kind": c.config.kind, "pid": c.pid, "start": c.start, "state": c.state,
                            "restarts": c.restarts, "started_at": c.started_at, "last_exit": c.last_exit,
                            "on_demand": c.on_demand} for n, c in self.children.items()},
        })

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        config = self.run.read(self.run.config)
        opts = Options.from_dict(config["options"])
        topo = load_topology(config["topology_file"])
        self.slot = acquire_slot(config.get("slot"))
        hosts = None
        if opts.network == "netns":
            hosts = self.build_network(topo, opts.bandwidth_scale or None, opts.network_builder)
        plan = make_plan(topo, self.slot.slot, self.run.path, opts, hosts)
        if self.network is not None:
            plan.manifest.network_backend = NetworkBackendInfo.model_validate(self.network.show() | {
                "operator_address": OPERATOR_ADDRESS, "state_dir": str(self.network.state_dir)})
        self.manifest = plan.manifest
        write_json_atomic(self.run.manifest, self.manifest.dump())
        if plan.start_broker:
            self.broker_proc = broker.start(self.run.broker, plan.broker_host, plan.broker_port,
                                            self.run.logs / "broker.log", netns=plan.broker_netns)
            self.broker_start = start_time(self.broker_proc.pid)
            log.info("broker listening on %s:%d", plan.broker_host, plan.broker_port)
        self.control = ControlServer(self.run.control_socket, self.command)
        for kind in {d.kind for d in plan.daemons}:   # the zygote: import once, share with every fork
            runner(kind)
        gc.collect()
        gc.freeze()
        log.info("forking %d daemons", len(plan.daemons))
        for cfg in plan.daemons:
            self.children[cfg.name] = Child(cfg)
            self.fork(self.children[cfg.name])
        self.write_status()
        log.info("started %d daemons (slot %d)", len(plan.daemons), self.slot.slot)

    def build_network(self, topo: object, bandwidth_scale: float | None, builder: str = "netns") -> NamespaceAddressing:
        from emulator.network import build_network
        from emulator.network.operator import attach_operator_port

        started = time.monotonic()
        self.network = build_network(topo, prefix=f"ct{self.slot.slot}", state_dir=self.run.network,
                                     bandwidth_scale=bandwidth_scale, backend=builder)
        attach_operator_port(self.network)
        log.info("network built in %.1fs (%d namespaces, by %s)", time.monotonic() - started,
                 len(self.network.namespaces), builder)
        return NamespaceAddressing(self.network)

    # -- daemons started on demand -----------------------------------------------------------
    def start_daemon(self, config: dict, entry: dict | None = None, grace: float = STOP_GRACE_S) -> dict:
        """`daemon.start`: add a daemon from its DaemonConfig (a dict), forked at once by the loop and
        kept running like the planned ones (its pid is in daemons.json); `entry` is its manifest entry
        (how `twin status` and clients find it), `grace` its SIGTERM-to-SIGKILL time when stopped.
        Refused, with nothing changed, if the config is not one, its kind is not installed, its spec
        is not its kind's or its name is taken."""
        try:
            cfg = DaemonConfig.from_dict(config)
        except TypeError as e:
            raise ValueError(f"daemon.start needs a DaemonConfig: {e}") from None
        if cfg.name in self.children:
            c = self.children[cfg.name]
            raise ValueError(f"a daemon named {cfg.name!r} is already in this twin ({c.state}, pid {c.pid})")
        runner(cfg.kind)   # ServiceError for a kind no service runs; imports its code before the fork
        cfg = typed(cfg)   # SpecError naming each field its kind's model refuses
        daemon_entry = DaemonEntry.model_validate(entry) if entry is not None else None
        if daemon_entry is not None and (daemon_entry.name, daemon_entry.kind) != (cfg.name, cfg.kind):
            raise ValueError(f"the manifest entry ({daemon_entry.name}, {daemon_entry.kind}) is not the daemon's "
                             f"({cfg.name}, {cfg.kind})")
        if not float(grace) >= 0:
            raise ValueError(f"grace must be a number of seconds >= 0, not {grace!r}")
        self.children[cfg.name] = Child(cfg, on_demand=True, grace=float(grace))   # forked by start_due
        if daemon_entry is not None and self.manifest is not None:
            self.manifest.daemons.append(daemon_entry)
            write_json_atomic(self.run.manifest, self.manifest.dump())
        self.write_status()
        log.info("starting %s (kind %s) on demand", cfg.name, cfg.kind)
        return {"name": cfg.name, "state": "starting"}

    def stop_daemon(self, name: str) -> dict:
        """`daemon.stop NAME`: stop a daemon started by `daemon.start` (SIGTERM, its grace, SIGKILL) by its
        recorded pid and start time, and forget it (daemons.json, the manifest)."""
        child = self.children.get(name)
        if child is None:
            raise ValueError(f"no daemon named {name!r} in this twin")
        if not child.on_demand:
            raise ValueError(f"{name} is part of the twin's plan: `twin down` stops it")
        del self.children[name]
        self.by_pid.pop(child.pid, None)   # its exit is no death to restart from
        stopped = bool(child.pid) and stop_process(child.pid, child.grace, start=child.start)
        if self.manifest is not None:
            self.manifest.daemons = [d for d in self.manifest.daemons if d.name != name]
            write_json_atomic(self.run.manifest, self.manifest.dump())
        self.write_status()
        log.info("stopped %s (pid %d) on demand", name, child.pid)
        return {"name": name, "pid": child.pid, "stopped": stopped, "state": child.state}

    def command(self, op: str, args: list, kwargs: dict) -> object:
        """A control-socket request: daemons started on demand, or operations on the live network."""
        if op in ("daemon.start", "daemon.stop"):
            handler = self.start_daemon if op == "daemon.start" else self.stop_daemon
            try:
                inspect.signature(handler).bind(*args, **kwargs)
            except TypeError as e:
                raise ValueError(f"{op}: {e}") from None
            return handler(*args, **kwargs)
        if self.network is None:
            raise RuntimeError("this twin runs on the loopback network: network faults need `twin up --network netns`")
        from emulator.network.remote import serve
        return serve(self.network, op, args, kwargs)

    def loop(self) -> None:
        with selectors.DefaultSelector() as sel:
            if self.control:
                sel.register(self.control, selectors.EVENT_READ)
            while not self.stopping:
                self.reap()
                self.start_due()
                if sel.get_map() and sel.select(timeout=0.05):
                    self.control.serve_one()
                elif not sel.get_map():
                    time.sleep(0.05)

    def stop(self) -> None:
        self.stopping = True
        self.reap()   # what already died is not signalled (its pid may be reused)
        for child in self.children.values():   # on demand (Slurm, whose jobs use the others) first
            if child.on_demand and child.pid:
                stop_process(child.pid, child.grace)
        stop_processes([c.pid for c in self.children.values() if c.pid and not c.on_demand], STOP_GRACE_S)
        for child in self.children.values():
            if child.pid:
                self.by_pid.pop(child.pid, None)
                child.pid, child.start, child.state = 0, None, "stopped"
        if self.broker_proc:   # after the daemons: they publish their last events to it
            stop_process(self.broker_proc.pid, STOP_GRACE_S, start=self.broker_start)   # reap() may have freed its pid
        self.write_status()
        if self.control is not None:
            self.control.close()
        if self.network is not None:
            self.network.stop()
        if self.slot:
            self.slot.release()


def announce_start(cfg: DaemonConfig, restarts: int) -> None:
    """Every daemon's first event, from its own process on the twin clock: it (re)started. Best
    effort: a daemon without its broker still starts (its own publisher reconnects later)."""
    try:
        with bus.SyncPublisher(cfg.broker_host, cfg.broker_port, cfg.twin, cfg.name, wait=True) as pub:
            pub.event("twin", "daemon_start", {"daemon_kind": cfg.kind, "pid": os.getpid(), "restarts": restarts},
                      time=cfg.clock.now(), node=cfg.name, message=f"{cfg.name} started (restarts: {restarts})")
            pub.flush(2.0)
    except (OSError, TimeoutError) as e:
        log.warning("%s: could not announce its start on the bus: %s", cfg.name, e)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m emulator.supervisor RUN_DIR", file=sys.stderr)
        return 2
    run = RunDir(argv[0])
    logging.basicConfig(level=logging.INFO, format="%(asctime)s supervisor %(levelname)s %(message)s")
    set_process_name("twin:supervisor")
    sup = Supervisor(run)

    def on_term(signum: int, _frame: object) -> None:
        sup.stopping = True

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    existing = run.running_supervisor()
    if existing and existing != os.getpid():
        log.error("a supervisor (pid %d) already runs in %s", existing, run.path)
        return 1
    run.record_supervisor(os.getpid())
    rc = 0
    try:
        sup.start()
        sup.loop()
    except Exception as e:
        log.error("twin failed to start: %s", e)
        write_json_atomic(run.path / "failed.json", {"error": str(e)})
        rc = 1
    finally:
        sup.stop()
        run.forget_supervisor()
    return rc

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
