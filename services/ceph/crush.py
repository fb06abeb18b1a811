"""The CRUSH map: hosts holding OSDs, and straw2 placement of a PG's shards onto them.

Hierarchy: one root (`default`) → hosts → OSDs, as `ceph osd tree` shows for a plain cluster.
Each OSD has a CRUSH weight (by convention its capacity in TiB), a device class (`hdd`/`ssd`),
and the OSD-map flags `up` and `in`. A rule takes a device class (Ceph's per-class shadow tree:
a host's weight counts only its OSDs of that class) and a failure domain (`host` or `osd`).

straw2: every candidate item draws `ln(u) / weight` with u = hash(x, item, r) ∈ (0, 1]; the
largest draw wins. An item's draw depends only on its own weight, so changing one item's weight
moves only the PGs that leave it (weight down) or come to it (weight up); with several OSDs per
host the host's weight changes too, so PGs may also move off its sibling OSDs, as in Ceph.
Ceph computes ln with a fixed-point table (`crush_ln`); we use floating point, so draws, and
therefore placements, are Ceph-like but not Ceph-equal.

Rules choose like `chooseleaf indep` (EC: a position that cannot be filled stays NONE and the
others keep their OSDs) or `chooseleaf firstn` (replicated: a compact list). CRUSH skips OUT
OSDs (reweight 0) but not DOWN ones: the up set then drops those (see pg.py).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from services.ceph.errors import CephError, PlacementError
from services.ceph.hashing import crush_hash32_3

DeviceClass = Literal["hdd", "ssd"]
FailureDomain = Literal["host", "osd"]
CHOOSE_TRIES = 50  # Ceph's choose_total_tries tunable (then see _fill_gaps)
TIB = 1 << 40


@dataclass
class Osd:
    id: int
    host: str
    device_class: DeviceClass = "hdd"
    weight: float = 18e12 / TIB  # CRUSH weight: an 18 TB HDD is 16.37 TiB
    capacity_bytes: int = 18 * 10**12
    up: bool = True
    in_: bool = True

    @property
    def name(self) -> str:
        return f"osd.{self.id}"


@dataclass
class Host:
    name: str
    bucket_id: int  # negative, as CRUSH bucket ids are
    osds: list[int] = field(default_factory=list)


def _draw(x: int, item: int, r: int, weight: float) -> float:
    if weight <= 0:
        return -math.inf
    u = crush_hash32_3(x, item, r) & 0xFFFF
    return math.log((u + 1) / 0x10000) / weight


def _straw2(x: int, r: int, items: list[tuple[int, float]]) -> int | None:
    best, best_draw = None, -math.inf
    for item, weight in items:
        d = _draw(x, item, r, weight)
        if d > best_draw:
            best, best_draw = item, d
    return best


class CrushMap:
    def __init__(self) -> None:
        self.hosts: dict[str, Host] = {}
        self.osds: dict[int, Osd] = {}

    # -- building ----------------------------------------------------------------------------

    def add_host(self, name: str) -> Host:
        if name not in self.hosts:
            self.hosts[name] = Host(name, -2 - len(self.hosts))  # -1 is the root
        return self.hosts[name]

    def add_osd(
        self, osd_id: int, host: str, device_class: DeviceClass = "hdd",
        capacity_bytes: int = 18 * 10**12, weight: float | None = None,
    ) -> Osd:
        if osd_id in self.osds:
            raise CephError("ALREADY_EXISTS", f"osd.{osd_id} already exists (on {self.osds[osd_id].host})")
        w = capacity_bytes / TIB if weight is None else weight
        osd = Osd(osd_id, host, device_class, w, capacity_bytes)
        self.osds[osd_id] = osd
        self.add_host(host).osds.append(osd_id)
        return osd

    def osd(self, osd_id: int) -> Osd:
        try:
            return self.osds[osd_id]
        except KeyError:
            raise CephError("NOT_FOUND", f"osd.{osd_id} does not exist") from None

    def set_weight(self, osd_id: int, weight: float) -> None:
        if weight < 0:
            raise CephError("INVALID_ARGUMENT", f"osd.{osd_id}: weight must be ≥ 0, got {weight}")
        self.osd(osd_id).weight = weight

    # -- placement ---------------------------------------------------------------------------

    def _leaves(self, host: Host, device_class: DeviceClass | None) -> list[Osd]:
        return [self.osds[i] for i in host.osds
                if device_class is None or self.osds[i].device_class == device_class]

    def _host_items(self, device_class: DeviceClass | None) -> list[tuple[int, float]]:
        items = []
        for host in self.hosts.values():
            w = sum(o.weight for o in self._leaves(host, device_class))
            if w > 0:
                items.append((host.bucket_id, w))
        return items

    def failure_domains(self, failure_domain: FailureDomain, device_class: DeviceClass | None) -> int:
        if failure_domain == "osd":
            return sum(1 for o in self.osds.values()
                       if o.weight > 0 and (device_class is None or o.device_class == device_class))
        return len(self._host_items(device_class))

    def place(
        self, x: int, size: int, failure_domain: FailureDomain = "host",
        device_class: DeviceClass | None = None, indep: bool = True,
    ) -> list[int | None]:
        """`size` OSDs for placement seed `x`, one per failure domain.

        indep (EC): position i keeps its OSD when others change; an unfillable position is None.
        firstn (replicated): only the OSDs found, in order. Raises PlacementError when the
        hierarchy has fewer failure domains than `size` (a pool that can never be whole)."""
        domains = self.failure_domains(failure_domain, device_class)
        if domains < size:
            cls = f" with {device_class} OSDs" if device_class else ""
            raise PlacementError(
                f"cannot place {size} shards on distinct {failure_domain}s: only {domains} "
                f"{failure_domain}{'s' if domains != 1 else ''}{cls} in the CRUSH map")
        by_bucket = {h.bucket_id: h for h in self.hosts.values()}
        host_items = self._host_items(device_class)
        osd_items = [(o.id, o.weight) for o in self.osds.values()
                     if device_class is None or o.device_class == device_class]

        def descend(r: int) -> tuple[int | None, int | None]:
            """(failure domain, in OSD) CRUSH draws for replica number r; OSD None if rejected."""
            if failure_domain == "osd":
                domain = leaf = _straw2(x, r, osd_items)
            else:
                domain = _straw2(x, r, host_items)
                if domain is None:
                    return None, None
                leaf = _straw2(x, r, [(o.id, o.weight) for o in self._leaves(by_bucket[domain], device_class)])
            if leaf is None or not self.osds[leaf].in_:
                return domain, None  # out: reweight 0, CRUSH rejects it
            return domain, leaf

        chosen: list[int | None] = [None] * size
        domains_used: dict[int, int] = {}  # failure domain → position holding it
        if indep:
            # Rounds, as crush_choose_indep: a position keeps what it drew in an earlier round, so one
            # rejected OSD re-draws only its own position.
            for ftotal in range(CHOOSE_TRIES):
                for rep in range(size):
                    if chosen[rep] is not None:
                        continue
                    domain, leaf = descend(rep + ftotal * size)
                    if domain is not None and leaf is not None and domain not in domains_used:
                        chosen[rep], domains_used[domain] = leaf, rep
                if None not in chosen:
                    break
        else:
            for rep in range(size):
                for ftotal in range(CHOOSE_TRIES):
                    domain, leaf = descend(rep + ftotal)
                    if domain is not None and leaf is not None and domain not in domains_used:
                        chosen[rep], domains_used[domain] = leaf, rep
                        break
        self._fill_gaps(x, chosen, domains_used, host_items, by_bucket, failure_domain, device_class)
        return chosen if indep else [o for o in chosen if o is not None]

    def _fill_gaps(
        self, x: int, chosen: list[int | None], used: dict[int, int], host_items: list[tuple[int, float]],
        by_bucket: dict[int, Host], failure_domain: FailureDomain, device_class: DeviceClass | None,
    ) -> None:
        """Deviation from Ceph, which gives up after choose_total_tries and leaves the position empty:
        when k+m equals the number of hosts, random draws often miss the last free host. We fill a
        gap with the unused domain of highest straw2 draw that has an in OSD, so a position is empty
        only when no failure domain can take it (e.g. an OSD out and no spare host)."""
        for rep, osd in enumerate(chosen):
            if osd is not None:
                continue
            candidates: list[tuple[float, int, int]] = []
            if failure_domain == "osd":
                for o in self.osds.values():
                    if o.id not in used and o.in_ and o.weight > 0 and (device_class in (None, o.device_class)):
                        candidates.append((_draw(x, o.id, rep, o.weight), o.id, o.id))
            else:
                for bucket, w in host_items:
                    if bucket in used:
                        continue
                    leaves = [(o.id, o.weight) for o in self._leaves(by_bucket[bucket], device_class) if o.in_]
                    leaf = _straw2(x, rep, leaves)
                    if leaf is not None:
                        candidates.append((_draw(x, bucket, rep, w), bucket, leaf))
            if candidates:
                _, domain, leaf = max(candidates)
                chosen[rep], used[domain] = leaf, rep

    def tree(self) -> list[tuple[str, float, Iterable[Osd]]]:
        """(host, weight, OSDs) rows, as `ceph osd tree` lists them."""
        return [(h.name, sum(self.osds[i].weight for i in h.osds), [self.osds[i] for i in h.osds])
                for h in self.hosts.values()]
