"""Parsers for infiniband-diags output (`ibnetdiscover`, `iblinkinfo -l`, `ibroute`) into the
fabric model. Pure: text in, `FabricState` out. Each parser raises DiagParseError on text it cannot
read, quoting the line, rather than guessing.

Formats (infiniband-diags 44, as run against ibsim):

    ibnetdiscover   Switch  64 "S-fc6a1c..."   # "ib-leaf01" enhanced port 0 lid 6 lmc 0
                    [1]     "H-b83fd2..."[1](b83fd2...1)   # "gpu001 mlx5_0" lid 3 4xHDR
                    Ca      1 "H-b83fd2..."    # "gpu001 mlx5_0"
                    [1](b83fd2...1)  "S-fc6a1c..."[1]      # lid 3 lmc 0 "ib-leaf01" lid 6 4xHDR
    iblinkinfo -l   0xfc6a1c... "   ib-leaf01"  6  1[  ] ==( 4X  53.125 Gbps Active/  LinkUp)==> ...
    ibroute LID     Unicast lids [0x0-0x13] of switch Lid 6 guid 0xfc6a1c... (ib-leaf01):
                    0x0003 001 : (Channel Adapter ...)     (with -n: "0x0003 001")
    smpquery pkeys     0: 0xffff 0x8002 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000
                    ...
                    64 pkeys capacity for this port
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from services.fabric.model import CA, SWITCH, FabricState, Link, Port, System


class DiagParseError(ValueError):
    pass


_NODE = re.compile(r'^(Switch|Ca|Rt)\s+(\d+)\s+"[SHR]-([0-9a-fA-F]+)"\s*#\s*"([^"]*)"(.*)$')
_PORT = re.compile(r'^\[(\d+)\](?:\(([0-9a-fA-F]+)\))?\s*"[SHR]-([0-9a-fA-F]+)"\[(\d+)\](?:\([0-9a-fA-F]+\))?'
                   r"\s*#\s*(.*)$")
_OWN_LID = re.compile(r"^lid\s+(\d+)\s+lmc\s+\d+")
_SPEED = re.compile(r"\blid\s+\d+\s+(\d+x\w+)\s*$")
_LID = re.compile(r"\blid\s+(\d+)")
_LINKINFO = re.compile(
    r'^0x([0-9a-fA-F]+)\s+"\s*(.*?)"\s+(\d+)\s+(\d+)\[[^\]]*\]\s+==\(\s*(?:(\d+X)\s+([\d.]+)\s+Gbps\s+)?'
    r"(\w+)/\s*(\w+)\s*\)==>")
_ROUTE_HEAD = re.compile(r"of switch Lid (\d+) guid 0x([0-9a-fA-F]+)")
_ROUTE = re.compile(r"^0x([0-9a-fA-F]+)\s+(\d+)(?:\s|$)")
_PKEY_ROW = re.compile(r"^(\d+):((?:\s+0x[0-9a-fA-F]{4})+)$")
_PKEY_CAP = re.compile(r"^(\d+) pkeys capacity for this port$")
FULL_MEMBER_BIT = 0x8000


@dataclass
class Discovery:
    """What `ibnetdiscover` says: systems, cables, and the LIDs of CA ports."""

    systems: dict[int, System] = field(default_factory=dict)
    links: list[Link] = field(default_factory=list)
    ca_lids: dict[tuple[int, int], int] = field(default_factory=dict)
    port_guids: dict[int, int] = field(default_factory=dict)  # port GUID -> node GUID


def _value(line: str) -> int:
    return int(line.split("=", 1)[1].split("(")[0], 16)


def parse_ibnetdiscover(text: str) -> Discovery:
    out = Discovery()
    pending: dict[str, int] = {}
    node: System | None = None
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith(("sysimgguid=", "devid=", "vendid=", "switchguid=", "caguid=", "rtguid=")):
            pending[line.split("=", 1)[0]] = _value(line)
            continue
        m = _NODE.match(line)
        if m:
            kind = SWITCH if m.group(1) == "Switch" else CA
            guid = int(m.group(3), 16)
            lid = _LID.search(m.group(5)) if kind == SWITCH else None
            node = System(guid, kind, m.group(4), int(m.group(2)), pending.get("sysimgguid", guid),
                          pending.get("devid", 0), int(lid.group(1)) if lid else None)
            out.systems[guid] = node
            out.port_guids[guid] = guid  # a switch's port GUID is its node GUID
            pending = {}
            continue
        m = _PORT.match(line)
        if m:
            if node is None:
                raise DiagParseError(f"ibnetdiscover line {n}: a port before any node: {raw!r}")
            port, remote, remote_port, comment = int(m.group(1)), int(m.group(3), 16), int(m.group(4)), m.group(5)
            speed = _SPEED.search(comment)
            out.links.append(Link((node.guid, port), (remote, remote_port), speed.group(1) if speed else ""))
            own = _OWN_LID.match(comment)
            if node.kind == CA and own:
                out.ca_lids[(node.guid, port)] = int(own.group(1))
            if m.group(2):
                out.port_guids[int(m.group(2), 16)] = node.guid
            continue
        raise DiagParseError(f"ibnetdiscover line {n}: not understood: {raw!r}")
    return out


def parse_iblinkinfo(text: str) -> list[Port]:
    """`iblinkinfo -l`: one Port per line (switch ports, linked or not, and CA ports). The GUID it
    prints is the *port* GUID (a CA's differs from its node GUID): `build_state` maps it."""
    ports = []
    for n, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        m = _LINKINFO.match(raw.strip())
        if not m:
            raise DiagParseError(f"iblinkinfo line {n}: not understood: {raw!r}")
        state = "Init" if m.group(7) == "Initialize" else m.group(7)
        ports.append(Port(int(m.group(1), 16), int(m.group(4)), int(m.group(3)), state, m.group(8), m.group(5),
                          float(m.group(6)) if m.group(6) else None))
    return ports


def parse_ibroute(text: str) -> tuple[int, int, dict[int, int]]:
    """`ibroute LID`: (switch GUID, switch LID, {destination LID: out port})."""
    head = _ROUTE_HEAD.search(text)
    if not head:
        raise DiagParseError(f"ibroute output has no 'Unicast lids ... of switch' header: {text[:200]!r}")
    lft: dict[int, int] = {}
    for raw in text.splitlines():
        m = _ROUTE.match(raw.strip())
        if m:
            lft[int(m.group(1), 16)] = int(m.group(2))
    return int(head.group(2), 16), int(head.group(1)), lft


def parse_pkeys(text: str) -> list[tuple[int, bool]]:
    """`smpquery pkeys ADDR [PORT]`: the port's P_Key table as (15-bit P_Key, full member) in
    table order, empty slots (0x0000) left out. The default partition reads as (0x7fff, True)."""
    out: list[tuple[int, bool]] = []
    rows = capacity = 0
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        m = _PKEY_ROW.match(line)
        if m:
            rows += 1
            for word in m.group(2).split():
                value = int(word, 16)
                if value & ~FULL_MEMBER_BIT:
                    out.append((value & ~FULL_MEMBER_BIT, bool(value & FULL_MEMBER_BIT)))
            continue
        m = _PKEY_CAP.match(line)
        if m:
            capacity = int(m.group(1))
            continue
        raise DiagParseError(f"smpquery pkeys line {n}: not understood: {raw!r}")
    if not rows or not capacity:
        raise DiagParseError(f"smpquery pkeys output has no P_Key table: {text[:200]!r}")
    return out


def build_state(discovery: Discovery, ports: list[Port], lfts: dict[int, dict[int, int]]) -> FabricState:
    """One consistent FabricState from the three diags' answers."""
    state = FabricState(systems=dict(discovery.systems), lfts=dict(lfts))
    for p in ports:
        node = discovery.port_guids.get(p.guid)
        if node is None:
            raise DiagParseError(f"iblinkinfo reports port {p.port} of unknown port GUID {p.guid:#x}")
        state.ports[(node, p.port)] = replace(p, guid=node)
    for link in discovery.links:
        state.add_link(link)
    return state
