"""`twin topo`: show a topology's derived figures, validate topology files.

Exit codes: 0 fine; 1 a file is invalid (validate); 2 a user error (no such topology, or `show`
on an invalid file). Errors are plain lines on stderr, never a traceback.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from emulator.topology import DerivedFigures, TopologyError, TopologyNotFound, load_topology
from emulator.topology.derive import CephFigures, ComputeFigures, EthernetFigures, LustreFigures, OobFigures
from emulator.topology.load import display

app = typer.Typer(no_args_is_help=True, add_completion=False, help=__doc__)

NameOrPath = Annotated[str, typer.Argument(help="A name under topologies/ (e.g. su-1024) or a path.")]


@app.command()
def show(
    topology: NameOrPath,
    as_json: Annotated[bool, typer.Option("--json", help="Print the figures as JSON.")] = False,
) -> None:
    """Print what a topology adds up to: GPUs, power, switches, links, bandwidth, capacity."""
    try:
        topo = load_topology(topology)
    except TopologyError as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(2) from None
    figures = topo.derive()
    if as_json:
        doc = {"source": display(topo.source), "description": topo.spec.description, **figures.to_dict()}
        typer.echo(json.dumps(doc, indent=2))
        return
    console = Console()
    console.print(Text(f"{topo.name} ({display(topo.source)})", style="bold"))
    if topo.spec.description:
        console.print(Text(topo.spec.description))
    for title, rows in _sections(figures):
        table = Table(title=title, title_justify="left", show_header=False, box=None, padding=(0, 2))
        console.print()
        table.add_column("figure", style="cyan")
        table.add_column("value")
        for label, value in rows:
            table.add_row(label, Text(_fmt(value)))
        console.print(table)


@app.command()
def validate(topologies: Annotated[list[str], typer.Argument(help="Names or paths.")]) -> None:
    """Check topology files; print each problem as FILE:LINE: FIELD: PROBLEM."""
    invalid = missing = False
    for arg in topologies:
        try:
            topo = load_topology(arg)
        except TopologyNotFound as exc:
            missing = True
            typer.echo(str(exc), err=True)
        except TopologyError as exc:
            invalid = True
            typer.echo(str(exc), err=True)
        else:
            f = topo.derive()
            typer.echo(
                f"{display(topo.source)}: ok ({f.servers} servers, {f.gpus} GPUs, "
                f"{f.racks} rack{'s' if f.racks != 1 else ''})"
            )
    if missing:
        raise typer.Exit(2)
    if invalid:
        raise typer.Exit(1)


def _fmt(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:,.4f}".rstrip("0").rstrip(".")
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


Section = tuple[str, list[tuple[str, Any]]]  # title, (label, value) rows


def _sections(f: DerivedFigures) -> list[Section]:
    sections = [_cluster(f), _compute(f.compute), _ethernet(f.ethernet), _oob(f.oob)]
    if f.lustre:
        sections.append(_lustre(f.lustre))
    if f.ceph:
        sections.append(_ceph(f.ceph))
    return sections


def _cluster(f: DerivedFigures) -> Section:
    p = f.power
    return "Cluster", [
        ("GPUs", f.gpus),
        ("GPU servers", f.servers),
        ("racks", f"{f.racks} x {f.servers_per_rack} servers"),
        ("MIG servers", f.mig_servers),
        ("management nodes", f.management_nodes),
        ("power per server", f"{_fmt(p.per_server_kw)} kW"),
        ("power per rack", f"{_fmt(p.per_rack_kw)} kW"),
        ("IT load (GPU servers)", f"{_fmt(p.total_kw)} kW = {_fmt(p.total_mw)} MW"),
        ("switches (all planes)", f.switches)]


def _compute(c: ComputeFigures) -> Section:
    return f"Compute fabric: InfiniBand {c.rate_gbps} Gb/s, two-layer fat tree", [
        ("leaves / spines", f"{c.leaves} / {c.spines} ({c.leaf_pairs} leaf pairs)"),
        ("servers per leaf pair", c.servers_per_leaf_pair),
        ("server-leaf links", c.server_leaf_links),
        ("leaf-spine links", c.leaf_spine_links),
        ("per leaf down / up", f"{c.leaf_downlinks} / {c.leaf_uplinks} links = "
                               f"{c.leaf_down_gbps / 1000:g} / {c.leaf_up_gbps / 1000:g} Tb/s"),
        ("oversubscription (down:up)", c.oversubscription),
        ("non-blocking", c.non_blocking),
        ("bisection bandwidth", f"{_fmt(c.bisection_tbps)} Tb/s"),
        ("leaf ports used", f"{c.leaf_ports_used} of {c.leaf_radix}"),
        ("spine ports used", f"{c.spine_ports_used} of {c.spine_radix}"),
        ("SHARP", c.sharp)]


def _ethernet(e: EthernetFigures) -> Section:
    return f"Storage/general Ethernet: {e.rate_gbps} GbE spine-leaf", [
        ("leaves / spines", f"{e.leaves} / {e.spines}"),
        ("host ports used", f"{e.host_ports} of {e.host_ports_available}"),
        ("leaf-spine links", e.leaf_spine_links),
        ("oversubscription (hosts:up)", e.oversubscription),
        ("spine ports used", f"{e.spine_ports_used} of {e.radix}"),
        ("segments", f"{', '.join(e.segments)} (isolated by {e.isolation})")]


def _oob(o: OobFigures) -> Section:
    return f"Out-of-band: {o.rate_gbps} GbE", [
        ("switches", f"{o.switches} ({o.core_switches} core + {o.access_switches} access)"),
        ("endpoints", f"{o.endpoints} of {o.endpoint_ports} ports")]


def _lustre(lu: LustreFigures) -> Section:
    return f"Lustre hot tier ({lu.fsname})", [
        ("MDS / MDT", f"{lu.mds} / {lu.mdts}"),
        ("OSS / OST", f"{lu.oss} / {lu.osts} x {_fmt(lu.ost_size_tb)} TB"),
        ("raw capacity", f"{_fmt(lu.raw_tb)} TB")]


def _ceph(ce: CephFigures) -> Section:
    rbd = f"{_fmt(ce.rbd_usable_tb)} TB (size {ce.rbd_size})" if ce.rbd_size else "none"
    return "Ceph cold tier", [
        ("hosts / HDD OSDs", f"{ce.hosts} / {ce.hdd_osds}"),
        ("HDD raw", f"{_fmt(ce.hdd_raw_tb)} TB"),
        (f"EC {ce.ec_profile} usable", f"{_fmt(ce.ec_usable_tb)} TB (overhead {_fmt(ce.ec_overhead)}x, "
                                       f"failure domain {ce.ec_failure_domain})"),
        ("spare host for EC", ce.ec_spare_host),
        ("SSD OSDs / raw", f"{ce.ssd_osds} / {_fmt(ce.ssd_raw_tb)} TB"),
        ("RBD usable", rbd)]
