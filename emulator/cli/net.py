"""`twin net ...`: the emulated network (`--network netns` or `mininet`): what it emulates, commands
inside its hosts, Mininet's CLI over it, faults, and clean-up."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from emulator.cli.common import DEFAULT, RunDirOption, console, err_console, fail
from emulator.network import Network, NetworkError, clean_network

app = typer.Typer(no_args_is_help=True, help=__doc__)

StateDirOption = Annotated[
    Path | None,
    typer.Option("--state-dir", help="The network's state directory (default: <run-dir>/network)."),
]


def _state_dir(run_dir: Path, state_dir: Path | None) -> Path:
    return state_dir if state_dir is not None else run_dir / "network"


def _attach(run_dir: Path, state_dir: Path | None) -> Network:
    try:
        return Network.attach(_state_dir(run_dir, state_dir))
    except NetworkError as e:
        fail(f"{e} (is the twin up with --network mininet?)")


@app.command()
def show(run_dir: RunDirOption = DEFAULT, state_dir: StateDirOption = None,
         as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """Per plane: what is emulated and how (routing, isolation, bandwidth, loss, latency)."""
    info = _attach(run_dir, state_dir).show()
    if as_json:
        console.print_json(json.dumps(info))
        return
    console.print(f"network [bold]{info['prefix']}[/] ({info['topology']}): {info['namespaces']} namespaces, "
                  f"{info['veth_pairs']} veth pairs, {info['cables']} cables; nodes and links made by "
                  f"{info.get('built_by', 'ip -batch')}", highlight=False)
    table = Table("plane", "prefix", "nodes", "forwarding", "isolation", "bandwidth", "loss", "latency",
                  show_lines=True)
    for plane, p in info["planes"].items():
        nodes = f"{p['hosts']} hosts, " + (f"{p['routers']} routers" if "routers" in p else f"{p['switches']} bridges")
        rate = p["rate"] + (f" → {p['emulated_rate']}" if p.get("emulated_rate") else "")
        table.add_row(plane, p["prefix"], nodes, p["forwarding"], p["isolation"], f"{rate}: {p['bandwidth']}",
                      p["loss"], p["latency"])
    console.print(table)
    for plane, p in info["planes"].items():
        cong = p.get("congestion")
        if cong:
            how = cong["summary"] if cong.get("applied") else f"{cong['mode']}, not emulated: {cong.get('why')}"
            console.print(f"{plane} under congestion: {how}", highlight=False)
    if info["faults"]:
        console.print("active faults: " + ", ".join(f"{f['id']} {f['kind']} {f['target']}" for f in info["faults"]),
                      highlight=False)


@app.command("exec", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def exec_(host: Annotated[str, typer.Argument(help="Host (gpu001) or switch namespace (ib-leaf01).")],
          cmd: Annotated[list[str], typer.Argument(help="The command and its arguments.")],
          run_dir: RunDirOption = DEFAULT, state_dir: StateDirOption = None) -> None:
    """Run a command inside an emulated host, e.g. `twin net exec gpu001 -- ping -c 1 10.100.0.4`."""
    net = _attach(run_dir, state_dir)
    try:
        ns = net.netns(host)
    except NetworkError as e:
        fail(str(e))
    if os.geteuid() != 0:
        fail("entering a network namespace needs root")
    raise typer.Exit(subprocess.call(["ip", "netns", "exec", ns, *cmd]))


@app.command()
def cli(run_dir: RunDirOption = DEFAULT,
        plane: Annotated[str, typer.Option(help="The plane hosts, IP() and pingall are about.")] = "compute") -> None:
    """Mininet's CLI over the running twin's network (`emulator.network.mininet.attach`), with the
    twin's `plane` and `faults` commands."""
    from emulator.rundir import RunDir

    if os.geteuid() != 0:
        fail("the network shell enters network namespaces and needs root")
    run = RunDir(run_dir)
    if run.running_supervisor() is None:
        fail(f"no twin running in {run.path}")
    try:
        from emulator.network.mininet import attach
        from emulator.network.mininet_cli import TwinCLI

        net = attach(run_dir, plane=plane)
    except NetworkError as e:
        fail(str(e))
    try:
        TwinCLI(net)
    finally:
        net.stop()


@app.command()
def clean(run_dir: RunDirOption = DEFAULT, state_dir: StateDirOption = None,
          prefix: Annotated[str | None, typer.Option(help="Remove every namespace named PREFIX-* instead.")] = None
          ) -> None:
    """Remove the network's namespaces, interfaces, bridges, routes, nftables tables and the processes
    left inside them; only this network's. Safe to run twice."""
    if os.geteuid() != 0:
        fail("removing network namespaces needs root")
    try:
        done = clean_network(prefix if prefix else _state_dir(run_dir, state_dir))
    except NetworkError as e:
        fail(str(e))
    console.print(f"removed {done['namespaces']} namespaces and {done['processes']} processes", highlight=False)


# --- faults on a running twin -----------------------------------------------------------------

fault_app = typer.Typer(no_args_is_help=True, help="Inject and clear network faults on the running twin: each is an "
                        "event on the bus (events/network/<kind>, faults/network/<id>) and in the fault log.")
app.add_typer(fault_app, name="fault")

MAX_FLAPS = 100
MAX_FLAP_SECONDS = 300.0


class _Target:
    """The running twin's network, its broker, and a lock so concurrent commands do not interleave."""

    def __init__(self, run_dir: Path) -> None:
        from emulator.rundir import RunDir, RunDirError

        run = RunDir(run_dir)
        try:
            manifest = run.load_manifest()
        except RunDirError as e:
            fail(f"no twin running in {run.path}: {e}")
        if run.running_supervisor() is None:
            fail(f"no twin running in {run.path} (its supervisor is not alive; `twin up` first)")
        backend = manifest.network_backend
        if backend is None:
            fail(f"twin {manifest.twin!r} in {run.path} runs with the {manifest.network} "
                 "network: network faults need `twin up --network netns`")
        if os.geteuid() != 0:
            fail("network faults change namespaces' interfaces and need root")
        self.twin = manifest.twin
        self.broker = manifest.broker
        self.clock = manifest.clock.to_clock()   # the twin's: its events' times
        self.state_dir = Path(backend.state_dir)
        self._lock = open(self.state_dir / ".faults.lock", "w")  # noqa: SIM115  (held for the command)
        import fcntl

        fcntl.flock(self._lock, fcntl.LOCK_EX)
        from emulator.network.remote import RemoteNetwork

        self.net = RemoteNetwork(run.control_socket)   # the supervisor holds the live route tables

    def run(self, op: Any) -> tuple[list[Any], list[Any]]:
        """Run `op(net)`; returns (faults raised, faults cleared) and publishes them on the bus."""
        before = {f.id for f in self.net.faults()}
        try:
            op(self.net)
        except NetworkError as e:
            fail(str(e))
        now = self.net.faults(include_cleared=True)
        raised = [f for f in now if f.active and f.id not in before]
        cleared = [f for f in now if not f.active and f.id in before]
        self.publish(raised, cleared)
        return raised, cleared

    def publish(self, raised: list[Any], cleared: list[Any]) -> None:
        from emulator.network import events

        try:
            events.publish(self.broker, self.twin, raised, cleared, clock=self.clock)
        except (OSError, TimeoutError) as e:
            err_console.print(f"[yellow]warning:[/] the fault is applied and logged, but not published on the bus "
                              f"({self.broker.host}:{self.broker.port}: {e})", highlight=False)


def _report(raised: list[Any], cleared: list[Any], nothing: str) -> None:
    from emulator.network.events import describe

    for f in raised:
        console.print(f"fault {describe(f)}", highlight=False)
    for f in cleared:
        console.print(f"cleared {describe(f)}", highlight=False)
    if not raised and not cleared:
        console.print(nothing, highlight=False)


IndexOption = Annotated[int | None, typer.Option("--index", help="Only parallel cable N (0-based); default: all.")]


def _fabric_cables(run_dir: Path, links: list[tuple[str, str, int | None]]) -> tuple[Any, dict[str, list[int]]] | None:
    """On a twin whose fabric manager drives the compute plane: the fabric client and, per switch,
    the ports of these compute cables (a, b, index; None: every parallel one) on that switch. None
    when that is not this twin or they are not compute cables."""
    from emulator.client import Twin

    try:
        twin = Twin.connect(run_dir)
    except (OSError, ValueError, KeyError):
        return None
    if not twin.daemons("fabric") or twin.manifest.network_backend is None:
        return None
    per_switch: dict[str, list[int]] = {}
    for a, b, index in links:
        ports = twin.network().fabric_cables(a, b, index)
        if ports is None:
            return None
        for switch, found in ports.items():
            per_switch.setdefault(switch, []).extend(found)
    return (twin, per_switch) if per_switch else None


def _through_fabric(target: _Target, found: tuple[Any, dict[str, list[int]]], enabled: bool,
                    what: str) -> tuple[list[Any], list[Any]]:
    """One fabric: the compute cables go down or up in ibsim (OpenSM re-sweeps once, its new LFTs
    become the plane's routes, the veths follow and the fault is logged), on every plane or on
    none; the fabric manager names the step that failed and rolls the others back."""
    from emulator.errors import TwinRpcError

    twin, per_switch = found

    def change(_net: Any) -> None:
        with twin.fabric() as fabric:
            for switch, ports in per_switch.items():
                try:
                    r = fabric.call("SetPortState", system=switch, port=ports[0], more_ports=ports[1:],
                                    enabled=enabled)
                except TwinRpcError as e:
                    fail(f"{what}: {e}", code=1)
                done = (f"{switch} port {ports[0]} is" if len(ports) == 1 else
                        f"{switch} ports {', '.join(map(str, ports))} are")
                console.print(f"{done} {r.port.logical_state}; OpenSM re-swept in {r.resweep_seconds:.2f} s"
                              if r.changed else f"{done} {r.port.logical_state} (unchanged)", highlight=False)

    return target.run(change)


@fault_app.command("link-down")
def link_down(a: Annotated[str, typer.Argument(help="One end: a host or switch, e.g. ib-leaf01.")],
              b: Annotated[str, typer.Argument(help="The other end, e.g. ib-spine01.")],
              index: IndexOption = None, run_dir: RunDirOption = DEFAULT) -> None:
    """Cut the cable(s) between A and B; routes move to the remaining paths. On the compute plane of
    a twin with the fabric manager, the cable goes down in the InfiniBand fabric (ibsim) and
    OpenSM's new routes become the plane's."""
    target = _Target(run_dir)
    found = _fabric_cables(run_dir, [(a, b, index)])
    if found:
        _report(*_through_fabric(target, found, False, f"link-down {a} {b}"), "nothing changed")
        return
    _report(*target.run(lambda n: n.link_down(a, b, index)), "nothing changed")


@fault_app.command("link-up")
def link_up(a: Annotated[str, typer.Argument(help="One end.")],
            b: Annotated[str, typer.Argument(help="The other end.")],
            index: IndexOption = None, run_dir: RunDirOption = DEFAULT) -> None:
    """Reconnect the cable(s) between A and B (through the fabric manager on its compute plane)."""
    target = _Target(run_dir)
    found = _fabric_cables(run_dir, [(a, b, index)])
    if found:
        _report(*_through_fabric(target, found, True, f"link-up {a} {b}"), f"no link between {a} and {b} was down")
        return
    _report(*target.run(lambda n: n.link_up(a, b, index)), f"no link between {a} and {b} was down")


@fault_app.command()
def flap(a: Annotated[str, typer.Argument(help="One end.")], b: Annotated[str, typer.Argument(help="The other end.")],
         times: Annotated[int, typer.Option("--times", help=f"Down/up cycles (1..{MAX_FLAPS}).")] = 3,
         period: Annotated[float, typer.Option("--period", help="Seconds per cycle, half down, half up (0.2..60).")
                           ] = 2.0,
         index: IndexOption = None, run_dir: RunDirOption = DEFAULT) -> None:
    """Take the link down and up TIMES times, PERIOD seconds a cycle; it ends up."""
    if not 1 <= times <= MAX_FLAPS:
        fail(f"--times must be between 1 and {MAX_FLAPS}, not {times}")
    if not 0.2 <= period <= 60 or times * period > MAX_FLAP_SECONDS:
        fail(f"--period must be between 0.2 and 60 s and the whole flap at most {MAX_FLAP_SECONDS:g} s "
             f"(asked: {times} x {period:g} s)")
    import time

    target = _Target(run_dir)
    try:
        target.net.check_link(a, b, index)  # validate before the first change
    except NetworkError as e:
        fail(str(e))
    found = _fabric_cables(run_dir, [(a, b, index)])   # a compute cable flaps in the fabric too
    for i in range(times):
        start = time.monotonic()
        if found:
            raised, _ = _through_fabric(target, found, False, f"flap {a} {b}")
        else:
            raised, _ = target.run(lambda n: n.link_down(a, b, index))
        time.sleep(max(0.0, period / 2 - (time.monotonic() - start)))
        if found:
            _through_fabric(target, found, True, f"flap {a} {b}")
        else:
            target.run(lambda n: n.link_up(a, b, index))
        console.print(f"flap {i + 1}/{times}: " + ", ".join(f.id for f in raised) + " down, up again",
                      highlight=False)
        if i + 1 < times:
            time.sleep(max(0.0, period - (time.monotonic() - start)))


@fault_app.command()
def loss(a: Annotated[str, typer.Argument(help="One end.")], b: Annotated[str, typer.Argument(help="The other end.")],
         percent: Annotated[float, typer.Option("--percent", help="Packets dropped per direction, 0..100 (0 clears).")],
         index: IndexOption = None, run_dir: RunDirOption = DEFAULT) -> None:
    """Drop PERCENT % of the packets on the cable(s) between A and B (nftables)."""
    _report(*_Target(run_dir).run(lambda n: n.set_loss(a, b, percent, index)), "no loss to clear")


@fault_app.command("switch-down")
def switch_down(name: Annotated[str, typer.Argument(help="A switch, e.g. ib-leaf01, eth-spine01, oob-core02.")],
                run_dir: RunDirOption = DEFAULT) -> None:
    """Power a switch off: every port down, routes move away."""
    _report(*_Target(run_dir).run(lambda n: n.switch_down(name)), "nothing changed")


@fault_app.command("switch-up")
def switch_up(name: Annotated[str, typer.Argument(help="The switch.")], run_dir: RunDirOption = DEFAULT) -> None:
    """Power a switch back on."""
    _report(*_Target(run_dir).run(lambda n: n.switch_up(name)), f"switch {name} was not down")


@fault_app.command()
def cut(host: Annotated[str, typer.Argument(help="A host, e.g. gpu002.")], run_dir: RunDirOption = DEFAULT) -> None:
    """Unplug every cable of a host, on every plane (its management API becomes unreachable)."""
    _report(*_Target(run_dir).run(lambda n: n.cut_off(host)), "nothing changed")


@fault_app.command()
def reconnect(host: Annotated[str, typer.Argument(help="The host.")], run_dir: RunDirOption = DEFAULT) -> None:
    """Plug a cut-off host back in."""
    _report(*_Target(run_dir).run(lambda n: n.reconnect(host)), f"{host} was not cut off")


def _hosts(value: str) -> list[str]:
    return [h.strip() for h in value.split(",") if h.strip()]


@fault_app.command()
def partition(group_a: Annotated[str, typer.Option("--a", help="Hosts on one side, comma-separated.")],
              group_b: Annotated[str, typer.Option("--b", help="Hosts on the other side.")],
              run_dir: RunDirOption = DEFAULT) -> None:
    """No packet between the two groups, on any plane."""
    _report(*_Target(run_dir).run(lambda n: n.partition(_hosts(group_a), _hosts(group_b))), "nothing changed")


@fault_app.command()
def heal(fault_id: Annotated[str | None, typer.Argument(help="A partition's fault id; default: every partition.")]
         = None, run_dir: RunDirOption = DEFAULT) -> None:
    """Lift one partition, or all of them."""
    _report(*_Target(run_dir).run(lambda n: n.heal(fault_id)), "no partition to heal")


@fault_app.command("clear")
def clear_fault(fault_id: Annotated[str, typer.Argument(help="A fault id from `twin net faults`, e.g. net-3.")],
                run_dir: RunDirOption = DEFAULT) -> None:
    """Clear any active network fault by id: what it did is undone (on a twin with the fabric
    manager, a compute cable comes back through the fabric). A fault still active after it is an
    error."""
    target = _Target(run_dir)
    fault = next((f for f in target.net.faults() if f.id == fault_id), None)
    found = None
    if fault is not None and fault.kind == "link-down":
        cables = [(a, b, int(i)) for a, b, i in (link.rsplit(":", 2) for link in fault.detail["links"])]
        found = _fabric_cables(run_dir, cables)
    if found:
        raised, cleared = _through_fabric(target, found, True, f"clear {fault_id}")
    else:
        raised, cleared = target.run(lambda n: n.clear(fault_id))
    if fault_id not in {f.id for f in cleared}:
        fail(f"network fault {fault_id} is still active after clearing it", code=1)
    _report(raised, cleared, "nothing changed")


@app.command()
def faults(run_dir: RunDirOption = DEFAULT, state_dir: StateDirOption = None,
           include_cleared: Annotated[bool, typer.Option("--all", help="Include cleared faults.")] = False,
           as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """The network fault log: active faults (with --all, cleared ones too)."""
    import datetime

    if state_dir is None:
        from emulator.rundir import RunDir, RunDirError

        run = RunDir(run_dir)
        try:
            manifest = run.load_manifest()
        except RunDirError as e:
            fail(f"no twin in {run.path}: {e}")
        if manifest.network_backend is None:
            fail(f"twin {manifest.twin!r} in {run.path} runs with the loopback network: it has no "
                 "network faults (`twin up --network netns`)")
        state_dir = Path(manifest.network_backend.state_dir)
    found = _attach(run_dir, state_dir).faults(include_cleared=include_cleared)
    if as_json:
        console.print_json(json.dumps([f.to_dict() for f in found]))
        return

    def when(t: float | None) -> str:
        return datetime.datetime.fromtimestamp(t).strftime("%H:%M:%S") if t else "-"

    table = Table("id", "kind", "target", "since", "cleared", "detail")
    for f in found:
        detail = ", ".join(f"{k}={','.join(map(str, v)) if isinstance(v, list) else v}" for k, v in f.detail.items()
                           if k != "links" or len(v) > 1)
        table.add_row(f.id, f.kind, f.target, when(f.time), when(f.cleared), detail)
    console.print(table if found else "no network faults" + ("" if include_cleared else " active"))
