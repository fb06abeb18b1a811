"""The running twin's network, driven through its supervisor (which holds the live route tables,
so a fault re-routes by difference in well under a second, as in-process)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from emulator import control
from emulator.network.errors import NetworkError
from emulator.network.faults import NetFault

# What a client may ask of the supervisor's Network; nothing else is reachable.
OPERATIONS = frozenset({
    "link_down", "link_up", "set_loss", "switch_down", "switch_up", "cut_off", "reconnect",
    "partition", "heal", "clear", "faults", "show", "check_link",
    "set_routes", "external_routes", "cables_down", "cables_up", "mark", "restore",
})


def encode(value: Any) -> Any:
    if isinstance(value, NetFault):
        return {"__netfault__": value.to_dict()}
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    return value


def decode(value: Any) -> Any:
    if isinstance(value, dict) and "__netfault__" in value:
        return NetFault.from_dict(value["__netfault__"])
    if isinstance(value, list):
        return [decode(v) for v in value]
    return value


def serve(network: Any, op: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """The supervisor's side: run an allowed operation on its live network."""
    if op not in OPERATIONS:
        raise NetworkError(f"unknown network operation {op!r}")
    if op == "check_link":
        return len(network._links(*args, **kwargs))
    if op == "external_routes":
        return sorted(external_routes(network, *args, **kwargs))
    if op == "set_routes":
        return network.set_routes(*decode_routes(*args), **kwargs)
    return encode(getattr(network, op)(*args, **kwargs))


def external_routes(network: Any, planes: list[str]) -> set[str]:
    """Hand the router namespaces of `planes` (e.g. ["compute"]) to an external route source (the
    fabric manager, from OpenSM's LFTs): the network's own shortest-path rerouting after a fault
    leaves them alone from now on, and goes on for every other namespace. `[]` gives them back
    (and reinstalls shortest-path routes everywhere). Returns the router labels handed over."""
    from emulator.network.routing import shortest_path_routes

    wanted = set(planes)
    unknown = wanted - set(network.plan.planes)
    if unknown:
        raise NetworkError(f"no plane {', '.join(sorted(unknown))} in network {network.prefix!r}")
    external = {label for label, ns in network.plan.namespaces.items() if ns.kind == "router" and ns.plane in wanted}
    if not external:
        network.__dict__.pop("_reroute", None)   # back to the class's own: every namespace
        network._reroute(set(network._tables))
        return external

    def reroute(touched: set[str]) -> None:
        if network.auto_routes:
            tables = {k: v for k, v in shortest_path_routes(network.plan, network.wire_up).items() if k not in external}
            # The kernel dropped the external routes over a veth that went down; one that comes back
            # up (a host reconnected, a switch powered on) gets them again, as they were last installed.
            tables |= {k: network.route_table(k).routes for k in touched & external}
            network.set_routes(tables, full=touched)

    network._reroute = reroute
    return external


def encode_routes(tables: dict[str, Any]) -> dict[str, list[Any]]:
    """`{label: [Route | (prefix, hops)]}` as JSON: `{label: [[prefix, [[via, dev], ...]], ...]}`
    (what `routing.as_route` reads back)."""
    from emulator.network.routing import as_route

    out = {}
    for label, routes in tables.items():
        out[label] = [[r.prefix, [[nh.via, nh.dev] for nh in r.nexthops]] for r in map(as_route, routes)]
    return out


def decode_routes(tables: dict[str, list[Any]]) -> tuple[dict[str, list[Any]]]:
    """`encode_routes` read back as `Route`s, built before they are installed: `RouteTable`
    caches nexthop tuples by `id()`, so routes made one by one while it iterates (and freed
    at once) could reuse one another's ids and share the wrong nexthops."""
    from emulator.network.routing import as_route

    return ({label: [as_route((r[0], [tuple(h) for h in r[1]])) for r in routes] for label, routes in tables.items()},)


class RemoteNetwork:
    def __init__(self, socket_path: Path) -> None:
        self.socket_path = socket_path

    def __getattr__(self, op: str) -> Any:
        if op not in OPERATIONS:
            raise AttributeError(op)

        def remote(*args: Any, **kwargs: Any) -> Any:
            try:
                return decode(control.call(self.socket_path, op, *args, **kwargs))
            except control.ControlError as e:
                raise NetworkError(str(e)) from None

        return remote

    def set_routes(self, tables: dict[str, Any], full: Any = ()) -> list[str]:
        """Install whole route tables in the supervisor's network (`Network.set_routes`)."""
        try:
            return control.call(self.socket_path, "set_routes", encode_routes(tables), full=sorted(full))
        except control.ControlError as e:
            raise NetworkError(str(e)) from None
