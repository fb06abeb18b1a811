"""`twin net cli`: an operator shell on the running twin's network, shaped like Mininet's CLI.

    twin> nodes                     hosts and switches
    twin> net                       every cable: `gpu001 rail0 <-> ib-leaf01 ...`
    twin> dump                      every host's addresses per plane
    twin> pingall [PLANE]           every host pair on one plane (default compute, rail 0)
    twin> gpu001 ping -c1 10.100.0.2   run a command inside a host (as in Mininet)
    twin> link ib-leaf01 ib-spine01 down|up
    twin> faults                    active network faults
    twin> exit

Reading goes to the network's record; changes go through the supervisor (the live network).
"""

from __future__ import annotations

import cmd
import shlex
import subprocess
from typing import Any, TextIO

from emulator.network.errors import NetworkError
from emulator.network.network import Network

PLANES = ("compute", "storage", "business", "oob")


class NetShell(cmd.Cmd):
    prompt = "twin> "

    def __init__(self, net: Network, remote: Any, stdin: TextIO | None = None, stdout: TextIO | None = None) -> None:
        super().__init__(stdin=stdin, stdout=stdout)
        if stdin is not None:
            self.use_rawinput = False
        self.net, self.remote = net, remote
        self.intro = (f"network {net.prefix}: {len(net.hosts)} hosts, {len(net.switches)} switches. "
                      "Type help or a host name followed by a command.")

    def say(self, text: str) -> None:
        self.stdout.write(text + "\n")

    def emptyline(self) -> bool:
        return False

    def do_nodes(self, _arg: str) -> None:
        """List hosts and switches."""
        self.say("hosts: " + " ".join(self.net.hosts))
        self.say("switches: " + " ".join(self.net.switches))

    def do_net(self, _arg: str) -> None:
        """List every cable (parallel cables numbered)."""
        plan = self.net.plan
        for link in plan.links:
            wire = plan.wires[link.wires[0]]
            self.say(f"{link.a}:{wire.a.ifname} <-> {link.b}:{wire.b.ifname}  ({link.fabric}, #{link.index})")

    def do_dump(self, _arg: str) -> None:
        """Every host's address on each plane."""
        for host in self.net.hosts:
            addrs = []
            for plane in PLANES:
                try:
                    addrs.append(f"{plane}={self.net.address(host, plane)}")
                except NetworkError:
                    continue
            self.say(f"{host}: " + " ".join(addrs))

    def do_pingall(self, arg: str) -> None:
        """pingall [PLANE]: ping every other host on one plane from every host; report the drop rate."""
        plane = arg.strip() or "compute"
        if plane not in PLANES:
            self.say(f"*** unknown plane {plane!r}; planes are {', '.join(PLANES)}")
            return
        hosts = [h for h in self.net.hosts if self._has(h, plane)]
        sent = lost = 0
        for src in hosts:
            targets = [self.net.address(dst, plane) for dst in hosts if dst != src]
            script = "".join(f"ping -n -q -c 1 -W 1 {a} >/dev/null 2>&1 && echo ok || echo no &\n" for a in targets)
            out = self.net.exec(src, ["sh", "-c", script + "wait\n"], timeout=30).stdout.split()
            sent += len(targets)
            lost += out.count("no")
            self.say(f"{src} -> {len(targets) - out.count('no')}/{len(targets)}")
        pct = 100.0 * lost / sent if sent else 0.0
        self.say(f"*** Results: {pct:.0f}% dropped ({sent - lost}/{sent} received)")

    def _has(self, host: str, plane: str) -> bool:
        try:
            self.net.address(host, plane)
            return True
        except NetworkError:
            return False

    def do_link(self, arg: str) -> None:
        """link A B up|down: reconnect or cut every cable between A and B."""
        parts = arg.split()
        if len(parts) != 3 or parts[2] not in ("up", "down"):
            self.say("*** usage: link A B up|down")
            return
        a, b, state = parts
        try:
            result = self.remote.link_down(a, b) if state == "down" else self.remote.link_up(a, b)
        except NetworkError as e:
            self.say(f"*** {e}")
            return
        faults = result if isinstance(result, list) else [result]
        self.say(f"link {a} {b} {state}: " + (", ".join(f.id for f in faults) or "no change"))

    def do_faults(self, _arg: str) -> None:
        """Active network faults."""
        try:
            faults = self.remote.faults()
        except NetworkError as e:
            self.say(f"*** {e}")
            return
        for f in faults:
            self.say(f"{f.id} {f.kind} {f.target}")
        if not faults:
            self.say("no active faults")

    def do_exit(self, _arg: str) -> bool:
        """Leave the shell."""
        return True

    do_quit = do_exit
    do_EOF = do_exit

    def default(self, line: str) -> bool:
        """`HOST COMMAND...`: run the command inside the host, as Mininet's CLI does."""
        try:
            host, *argv = shlex.split(line)
        except ValueError as e:
            self.say(f"*** {e}")
            return False
        try:
            ns = self.net.netns(host)
        except NetworkError:
            self.say(f"*** unknown command or host: {host!r} (try `nodes` or `help`)")
            return False
        if not argv:
            self.say(f"*** what should {host} run?")
            return False
        result = subprocess.run(["ip", "netns", "exec", ns, *argv], capture_output=True, text=True)
        self.stdout.write(result.stdout + result.stderr)
        return False
