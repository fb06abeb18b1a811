"""`clean_network`: remove a twin's network, and only it, even after a crash. Idempotent.

Everything a network creates lives inside its own namespaces (`<prefix>-...`): interfaces,
bridges, routes, nftables tables; except the operator port's veth `<prefix>-op` and the
unreachable routes fencing the plane prefixes, in the machine's namespace. So cleaning is: kill
the processes still inside those namespaces (daemons a crashed supervisor left behind), delete
the operator veth and the fence routes, then delete the namespaces in one `ip -batch`;
the kernel frees their devices and tables with them. Other namespaces, including
other twins' (`ct1-...`) and ones whose names merely start alike (`ct01-...`), are never touched.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from emulator.network import kernel
from emulator.network.errors import NetworkError
from emulator.network.plan import FENCE_PROTO, PREFIX_RE, operator_ifname

STATE_FILE = "network.json"


def _owned(prefix: str, recorded: list[str]) -> list[str]:
    present = set(kernel.netns_list())
    mine = {n for n in recorded if n in present and n.startswith(prefix + "-")}
    mine |= {n for n in present if n.startswith(prefix + "-")}
    return sorted(mine)


def _fence_left() -> list[str]:
    """The fence routes in this namespace (`ip route show proto 77` prints them without the proto)."""
    out = subprocess.run(["ip", "-4", "route", "show", "proto", FENCE_PROTO], capture_output=True, text=True)
    return [line.strip() for line in out.stdout.splitlines() if line.startswith("unreachable ")]


def clean_network(target: str | Path, kill_processes: bool = True, timeout: float = 30.0) -> dict[str, int | float]:
    """Remove the network recorded in `target` (a state directory or its network.json), or every
    namespace named `<target>-...` when `target` is a bare prefix such as "ct0".

    Returns what was removed: {"namespaces": n, "processes": n, "seconds": s}."""
    t0 = time.monotonic()
    path = Path(target)
    state_file = path / STATE_FILE if path.is_dir() else path if path.suffix == ".json" else None
    recorded: list[str] = []
    fence: list[str] = []
    if state_file is not None:
        if not state_file.exists():
            return {"namespaces": 0, "processes": 0, "seconds": 0.0}
        try:
            state = json.loads(state_file.read_text())
        except ValueError as e:
            raise NetworkError(f"unreadable network state file {state_file}: {e}") from None
        prefix = state["prefix"]
        recorded = list(state.get("namespaces", []))
        fence = list(state.get("root_routes", []))
    else:
        prefix = str(target)
        if not PREFIX_RE.match(prefix):
            raise NetworkError(f"{target!r} is neither a network state directory nor a network prefix")
    names = _owned(prefix, recorded)
    pids = kernel.pids_in(names) if kill_processes else {}
    kernel.kill_pids(pids)
    # The operator port's veth is in this namespace: deleted here, its OOB route goes now, not when
    # the kernel gets round to freeing the core namespace (a twin started right after would refuse).
    if state_file is None and Path(f"/sys/class/net/{operator_ifname(prefix)}").exists():
        fence = [f"{line} proto {FENCE_PROTO}" for line in _fence_left()]   # no record: the twin's own
    lines = [f"link del {operator_ifname(prefix)}\n"] + [f"route del {r}\n" for r in fence]
    kernel.run_jobs([kernel.Job("", "ip", "".join(lines), force=True)])
    if names:
        kernel.run_jobs([kernel.Job("", "ip", "".join(f"netns del {n}\n" for n in names), force=True)])
    deadline = time.monotonic() + timeout
    while _owned(prefix, recorded):
        if time.monotonic() > deadline:
            raise NetworkError(f"namespaces of network {prefix!r} still present after {timeout:g} s")
        time.sleep(0.05)
    if state_file is not None:
        state_file.unlink(missing_ok=True)
    return {"namespaces": len(names), "processes": len(pids), "seconds": round(time.monotonic() - t0, 3)}
