"""NVIDIA's SHARP Aggregation Manager (sharp_am) over the fabric OpenSM left: which switches
aggregate a job's reductions, and what happens to that when the fabric changes. Pure: reads a
`FabricState`, no I/O, no clock.

Modelled on sharp_am in dynamic-trees mode (the default since SHARP 3.4): a tree is built for a job
when it starts and deleted when it ends, and a job on several rails gets a tree per rail.

- A tree of rail r: its children are the job's HCAs on rail r ("gpu001 mlx5_3" is rail 3), its
  aggregation nodes the leaves they are cabled to, each joined to the root by one leaf–spine link.
  The root is the spine with an Active link from every one of those leaves that roots the fewest
  trees (then by name); a rail on a single leaf is rooted on that leaf.
- Limits: `max_trees` trees in use, at most `max_streaming_trees` of them streaming (SAT). The
  defaults are the Quantum-2 figures of FIDELITY.md §3, which NVIDIA's public SHARP docs do not
  state: parameters. A request over a limit, an unknown or non-Active HCA, or a rail no spine
  serves is refused (`SharpError`, sharp_am's "No resources") and changes nothing.
- `update(state)` after a fabric change: a tree whose root, links and HCAs are all still Active is
  kept as it is; one that lost its root or a link it used is rebuilt on another spine reaching all
  its leaves (its old spine, over other cables, only if no other qualifies); if none does, or an
  HCA of the rail is down, the tree goes to "error" and its job has `sharp_available` False, so the
  collective model falls back to non-SHARP algorithms. A tree in error is rebuilt once the fabric
  allows it again (within the limits). Each change is returned as a `SharpChange`.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from services.fabric.balance import switch_roles
from services.fabric.errors import FabricError
from services.fabric.model import CA, FabricState, Port

READY = "ready"
ERROR = "error"
MAX_TREES = 1023  # Quantum-2 (FIDELITY.md §3)
MAX_STREAMING_TREES = 511

_HCA = re.compile(r"^(?P<server>\S+) mlx5_(?P<rail>\d+)$")

End = tuple[int, int]  # (node GUID, port)


class SharpError(FabricError, ValueError):
    """A SHARP request refused: what and why. Nothing was changed."""

    what = "SHARP"


@dataclass
class SharpTree:
    tree_id: int
    job_id: str
    rail: int
    streaming: bool
    children: dict[str, list[str]]  # leaf -> the job's HCAs cabled to it
    root: str | None = None  # a spine, or the only leaf; None in error
    links: list[str] = field(default_factory=list)  # "ib-leaf01[49]-ib-spine01[1]", one per leaf
    state: str = READY
    reason: str = ""
    _root_guid: int | None = field(default=None, repr=False, compare=False)
    _ends: list[tuple[End, End]] = field(default_factory=list, repr=False, compare=False)

    @property
    def leaves(self) -> list[str]:
        return sorted(self.children)

    @property
    def hcas(self) -> list[str]:
        return sorted(h for hs in self.children.values() for h in hs)

    def to_dict(self) -> dict[str, object]:
        return {"job_id": self.job_id, "tree_id": self.tree_id, "rail": self.rail, "root": self.root,
                "leaves": self.leaves, "hcas": self.hcas, "children": {k: list(v) for k, v in self.children.items()},
                "links": list(self.links), "streaming": self.streaming, "state": self.state, "reason": self.reason}


@dataclass
class SharpJob:
    job_id: str
    hcas: list[str]
    streaming: bool
    trees_per_job: int  # trees on each rail
    trees: list[SharpTree] = field(default_factory=list)

    @property
    def sharp_available(self) -> bool:
        """Every tree of the job is up: else its collectives run without SHARP."""
        return bool(self.trees) and all(t.state == READY for t in self.trees)

    @property
    def state(self) -> str:
        return READY if self.sharp_available else ERROR

    def to_dict(self) -> dict[str, object]:
        return {"job_id": self.job_id, "hcas": list(self.hcas), "streaming": self.streaming,
                "trees_per_job": self.trees_per_job, "state": self.state, "sharp_available": self.sharp_available,
                "trees": [t.to_dict() for t in self.trees]}


@dataclass(frozen=True)
class SharpChange:
    """One tree moved, failed or came back, for the caller to turn into an event."""

    job_id: str
    rail: int
    tree_id: int
    old_root: str | None
    new_root: str | None  # None: the tree is in error
    reason: str

    def to_dict(self) -> dict[str, object]:
        return {"job_id": self.job_id, "rail": self.rail, "tree_id": self.tree_id, "old_root": self.old_root,
                "new_root": self.new_root, "reason": self.reason}


class AggregationManager:
    def __init__(self, state: FabricState, max_trees: int = MAX_TREES,
                 max_streaming_trees: int = MAX_STREAMING_TREES) -> None:
        if max_trees < 0 or max_streaming_trees < 0:
            raise SharpError(f"tree limits must not be negative: {max_trees}, {max_streaming_trees} streaming")
        self.max_trees = max_trees
        self.max_streaming_trees = max_streaming_trees
        self._jobs: dict[str, SharpJob] = {}
        self._index(state)

    # --- queries ---

    def jobs(self) -> list[SharpJob]:
        return list(self._jobs.values())

    def job(self, job_id: str) -> SharpJob:
        if job_id not in self._jobs:
            raise SharpError(f"no SHARP job {job_id!r}", "NOT_FOUND")
        return self._jobs[job_id]

    def trees(self) -> list[SharpTree]:
        return sorted((t for j in self._jobs.values() for t in j.trees), key=lambda t: t.tree_id)

    def in_use(self, streaming: bool | None = None) -> int:
        """Trees holding switch resources (not in error); only streaming ones if `streaming`."""
        return sum(1 for t in self.trees() if t.state == READY and (streaming is None or t.streaming == streaming))

    # --- jobs ---

    def create_job(self, job_id: str, hcas: Sequence[str] | None = None, *, servers: Sequence[str] | None = None,
                   rails: Iterable[int] | None = None, streaming: bool = False, trees_per_job: int = 1) -> SharpJob:
        """Trees for a job over `hcas` (node descriptions), or over `rails` (default: all) of `servers`.
        `trees_per_job` trees on each rail. Raises SharpError, changing nothing."""
        if not job_id or job_id in self._jobs:
            raise SharpError(f"SHARP job {job_id!r} already exists", "ALREADY_EXISTS") if job_id else \
                SharpError("a SHARP job needs an id")
        if trees_per_job < 1:
            raise SharpError(f"trees_per_job must be at least 1, got {trees_per_job}")
        names = self._job_hcas(hcas, servers, rails)
        by_rail: dict[int, list[str]] = {}
        for name in names:
            by_rail.setdefault(_rail(name), []).append(name)
        layouts = {rail: self._layout(rail, by_rail[rail]) for rail in sorted(by_rail)}
        need = len(layouts) * trees_per_job
        if self.in_use() + need > self.max_trees:
            raise SharpError(f"no resources: job {job_id} needs {need} trees, {self.in_use()} of "
                             f"{self.max_trees} are in use", "RESOURCE_EXHAUSTED")
        if streaming and self.in_use(True) + need > self.max_streaming_trees:
            raise SharpError(f"no resources: job {job_id} needs {need} streaming trees, {self.in_use(True)} of "
                             f"{self.max_streaming_trees} are in use", "RESOURCE_EXHAUSTED")
        roots, links = self._loads()
        ids = self._free_ids(need)
        job = SharpJob(job_id, list(names), streaming, trees_per_job)
        for rail, layout in layouts.items():
            for _ in range(trees_per_job):
                tree = SharpTree(ids.pop(0), job_id, rail, streaming, {})
                self._build(tree, layout, roots, links)  # raises before the job is stored
                job.trees.append(tree)
        self._jobs[job_id] = job
        return job

    def release_job(self, job_id: str) -> SharpJob:
        """The job ended: its trees are deleted and their resources free."""
        job = self.job(job_id)
        del self._jobs[job_id]
        return job

    # --- fabric changes ---

    def update(self, state: FabricState) -> list[SharpChange]:
        """Re-check every tree against the fabric as it is now; see the module docstring."""
        self._index(state)
        fix: list[tuple[SharpJob, SharpTree, dict[int, list[str]] | str, str]] = []
        heal: list[tuple[SharpJob, SharpTree, dict[int, list[str]] | str]] = []
        for job in self._jobs.values():
            layouts: dict[int, dict[int, list[str]] | str] = {}
            for tree in job.trees:
                if tree.rail not in layouts:
                    try:
                        layouts[tree.rail] = self._layout(tree.rail, [h for h in job.hcas if _rail(h) == tree.rail])
                    except SharpError as e:
                        layouts[tree.rail] = str(e)
                layout = layouts[tree.rail]
                if tree.state == READY:
                    broken = layout if isinstance(layout, str) else self._broken(tree, layout)
                    if broken is not None:
                        fix.append((job, tree, layout, broken))
                else:
                    heal.append((job, tree, layout))
        for _, tree, _, _ in fix:
            tree.state = ERROR  # it no longer holds its spine and links
        roots, links = self._loads()
        changes: list[SharpChange] = []
        for job, tree, layout, broken in fix:
            old, old_guid = tree.root, tree._root_guid
            if isinstance(layout, str):
                self._fail(tree, layout)
            else:
                try:
                    self._build(tree, layout, roots, links, avoid=old_guid)
                except SharpError as e:
                    self._fail(tree, f"{broken}; {e}")
            reason = broken if tree.state == READY else tree.reason
            changes.append(SharpChange(job.job_id, tree.rail, tree.tree_id, old, tree.root, reason))
        # Trees in error come back once their rail is whole, after the rebuilt ones took their share.
        for job, tree, layout in heal:
            if isinstance(layout, str):
                tree.reason = layout
                continue
            if not self._room(tree.streaming):
                tree.reason = "no resources: the tree limit is reached"
                continue
            try:
                self._build(tree, layout, roots, links)
            except SharpError as e:
                tree.reason = str(e)
                continue
            changes.append(SharpChange(job.job_id, tree.rail, tree.tree_id, None, tree.root, "recovered"))
        return changes

    # --- internals ---

    def _index(self, state: FabricState) -> None:
        """What the manager needs of a state: the CA ports by name, and the Active leaf–spine links."""
        self._state = state
        self._roles = switch_roles(state)
        self._names = {s.guid: s.description for s in state.systems.values()}
        self._ca: dict[str, tuple[int, Port | None]] = {s.description: (s.guid, None) for s in state.cas}
        for (guid, _), p in sorted(state.ports.items()):
            system = state.systems.get(guid)
            if system is not None and system.kind == CA and self._ca[system.description][1] is None:
                self._ca[system.description] = (guid, p)  # an HCA's first port: ConnectX-7 HCAs have one
        self._up: dict[int, dict[int, list[tuple[End, End]]]] = {}  # leaf -> spine -> Active links
        for link in state.links:
            for leaf_end, spine_end in ((link.a, link.b), (link.b, link.a)):
                if self._roles.get(leaf_end[0]) == "leaf" and self._roles.get(spine_end[0]) == "spine" \
                        and self._active(leaf_end, spine_end):
                    self._up.setdefault(leaf_end[0], {}).setdefault(spine_end[0], []).append((leaf_end, spine_end))

    def _active(self, a: End, b: End) -> bool:
        pa, pb = self._state.ports.get(a), self._state.ports.get(b)
        return pa is not None and pb is not None and pa.active and pb.active and self._state.peer(*a) == b

    def _job_hcas(self, hcas: Sequence[str] | None, servers: Sequence[str] | None,
                  rails: Iterable[int] | None) -> list[str]:
        if (hcas is None) == (servers is None):
            raise SharpError("a SHARP job names either its HCAs or its servers")
        if isinstance(hcas, str):
            hcas = [hcas]
        if servers is not None:
            wanted = None if rails is None else set(rails)
            names = []
            for server in servers:
                mine = sorted((n for n in self._ca if _HCA.match(n) and n.split(" ", 1)[0] == server), key=_rail)
                if not mine:
                    raise SharpError(f"no HCA of server {server!r} in the fabric")
                names += [n for n in mine if wanted is None or _rail(n) in wanted]
            hcas = names
        assert hcas is not None
        if not hcas:
            raise SharpError("a SHARP job needs at least one HCA")
        seen: set[str] = set()
        for name in hcas:
            if not _HCA.match(name):
                raise SharpError(f"{name!r} is not an HCA node description (like 'gpu001 mlx5_3')")
            if name in seen:
                raise SharpError(f"HCA {name!r} is listed twice")
            seen.add(name)
        return list(hcas)

    def _layout(self, rail: int, hcas: list[str]) -> dict[int, list[str]]:
        """Leaf GUID -> the rail's HCAs cabled to it; SharpError if an HCA is unknown or not Active."""
        layout: dict[int, list[str]] = {}
        for name in hcas:
            if name not in self._ca:
                raise SharpError(f"no HCA {name!r} in the fabric")
            guid, port = self._ca[name]
            if port is None or not port.active:
                raise SharpError(f"HCA {name} is {port.state if port else 'without a port'}, not Active")
            peer = self._state.peer(guid, port.port)
            if peer is None or self._roles.get(peer[0]) != "leaf":
                raise SharpError(f"HCA {name} is not cabled to a leaf")
            layout.setdefault(peer[0], []).append(name)
        return layout

    def _broken(self, tree: SharpTree, layout: dict[int, list[str]]) -> str | None:
        """Why a tree in use no longer stands, or None if it does."""
        if {self._names[g]: sorted(hs) for g, hs in layout.items()} != {k: sorted(v) for k, v in tree.children.items()}:
            return f"rail {tree.rail} HCAs now hang off other leaves"
        if tree._root_guid not in self._state.systems:
            return f"root {tree.root} left the fabric"
        for leaf_end, spine_end in tree._ends:
            if not self._active(leaf_end, spine_end):
                return f"link {_link_name(self._names, leaf_end, spine_end)} is not Active"
        return None

    def _build(self, tree: SharpTree, layout: dict[int, list[str]], roots: Counter[int],
               links: Counter[End], avoid: int | None = None) -> None:
        """Root `tree` on the least-loaded spine serving every leaf of `layout` (or its only leaf),
        one least-used link per leaf; update the loads. SharpError if no spine serves them all."""
        leaves = sorted(layout, key=lambda g: self._names[g])
        if len(leaves) == 1:
            root, ends = leaves[0], []
        else:
            spines = [g for g, role in self._roles.items() if role == "spine" and g not in layout
                      and all(g in self._up.get(leaf, {}) for leaf in leaves)]
            if avoid is not None and any(g != avoid for g in spines):
                spines = [g for g in spines if g != avoid]
            if not spines:
                raise SharpError(f"no spine reaches all of rail {tree.rail}'s leaves "
                                 f"({', '.join(self._names[g] for g in leaves)}) over Active links")
            root = min(spines, key=lambda g: (roots[g], self._names[g]))
            ends = [min(self._up[leaf][root], key=lambda e: (links[e[0]], e[0][1])) for leaf in leaves]
        roots[root] += 1
        for leaf_end, _ in ends:
            links[leaf_end] += 1
        tree.children = {self._names[g]: sorted(layout[g], key=_rail_key) for g in leaves}
        tree.root, tree._root_guid = self._names[root], root
        tree._ends = ends
        tree.links = [_link_name(self._names, a, b) for a, b in ends]
        tree.state, tree.reason = READY, ""

    def _fail(self, tree: SharpTree, reason: str) -> None:
        tree.state, tree.reason = ERROR, reason
        tree.root, tree._root_guid, tree._ends, tree.links = None, None, [], []

    def _room(self, streaming: bool) -> bool:
        return self.in_use() < self.max_trees and (not streaming or self.in_use(True) < self.max_streaming_trees)

    def _loads(self) -> tuple[Counter[int], Counter[End]]:
        """Trees rooted on each switch, and trees over each leaf uplink, of the trees in use."""
        roots: Counter[int] = Counter()
        links: Counter[End] = Counter()
        for tree in self.trees():
            if tree.state == READY and tree._root_guid is not None:
                roots[tree._root_guid] += 1
                for leaf_end, _ in tree._ends:
                    links[leaf_end] += 1
        return roots, links

    def _free_ids(self, n: int) -> list[int]:
        used = {t.tree_id for t in self.trees()}
        ids: list[int] = []
        i = 0
        while len(ids) < n:
            if i not in used:
                ids.append(i)
            i += 1
        return ids


def _rail(hca: str) -> int:
    m = _HCA.match(hca)
    if m is None:
        raise SharpError(f"{hca!r} is not an HCA node description (like 'gpu001 mlx5_3')")
    return int(m["rail"])


def _rail_key(hca: str) -> tuple[str, int]:
    return hca.split(" ", 1)[0], _rail(hca)


def _link_name(names: dict[int, str], a: End, b: End) -> str:
    return f"{names.get(a[0], hex(a[0]))}[{a[1]}]-{names.get(b[0], hex(b[0]))}[{b[1]}]"
