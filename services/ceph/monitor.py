"""The monitor's OSD map: which OSDs are up/down and in/out, with Ceph's timing (pure; time passed in).

Timing (FIDELITY §4, each a parameter with Ceph's default):
- OSDs ping their peers every `heartbeat_interval` (≤ 6 s, `osd_heartbeat_interval`); a killed
  OSD's last ping is the last multiple of that interval since it booted;
- peers report it failed once no ping came for `heartbeat_grace` (20 s, `osd_heartbeat_grace`) and the
  monitor marks it down: so a kill -9 is noticed 14–20 s later. A clean stop (`systemctl stop`)
  tells the monitor itself and is marked down at once;
- a down OSD is marked out after `down_out_interval` (600 s, `mon_osd_down_out_interval`) unless
  the `noout` flag is set; out is what moves its data elsewhere (backfill);
- an OSD that boots is marked up at once, and in again if the monitor had marked it out
  automatically (`mon_osd_auto_mark_auto_out_in`); one an operator marked out stays out.

Each change of the map makes a new epoch; changes found by one `tick` share one epoch, as the
monitor batches a proposal.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from services.ceph.crush import CrushMap
from services.ceph.errors import CephError


@dataclass(frozen=True)
class MonTiming:
    heartbeat_interval: float = 6.0
    heartbeat_grace: float = 20.0
    down_out_interval: float = 600.0


@dataclass(frozen=True)
class MapChange:
    epoch: int
    time: float
    osd: int
    what: str  # "up", "down", "in", "out", "weight"
    reason: str


@dataclass
class _OsdLife:
    running: bool = True
    booted_at: float = 0.0
    stopped_at: float | None = None
    down_at: float | None = None
    auto_out: bool = False


@dataclass
class Monitor:
    crush: CrushMap
    timing: MonTiming = field(default_factory=MonTiming)
    names: tuple[str, ...] = ("a",)  # one monitor daemon runs (mon.a); `ceph -s` counts what runs
    started_at: float = 0.0
    epoch: int = 1
    flags: set[str] = field(default_factory=set)
    log: list[MapChange] = field(default_factory=list)
    last_up_change: float = 0.0
    last_in_change: float = 0.0
    _life: dict[int, _OsdLife] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.last_up_change = self.last_in_change = self.started_at
        for osd in self.crush.osds.values():
            self._life[osd.id] = _OsdLife(running=osd.up, booted_at=self.started_at)

    def _lifeof(self, osd_id: int) -> _OsdLife:
        self.crush.osd(osd_id)  # NOT_FOUND for an unknown id
        return self._life.setdefault(osd_id, _OsdLife(booted_at=self.started_at))

    def _change(self, changes: list[tuple[int, str, str]], now: float) -> list[MapChange]:
        if not changes:
            return []
        self.epoch += 1
        out = [MapChange(self.epoch, now, osd, what, reason) for osd, what, reason in changes]
        self.log.extend(out)
        for c in out:
            if c.what in ("up", "down"):
                self.last_up_change = now
            elif c.what in ("in", "out"):
                self.last_in_change = now
        return out

    # -- events ------------------------------------------------------------------------------

    def osd_stopped(self, osd_id: int, now: float, clean: bool = False) -> list[MapChange]:
        """The OSD process ended. A clean stop is marked down now; a crash when the grace runs out."""
        life = self._lifeof(osd_id)
        if not life.running:
            return []
        life.running, life.stopped_at = False, now
        if clean and self.crush.osds[osd_id].up:
            return self._mark_down([osd_id], now, "marked itself down (clean shutdown)")
        return []

    def osd_started(self, osd_id: int, now: float) -> list[MapChange]:
        life = self._lifeof(osd_id)
        osd = self.crush.osds[osd_id]
        life.running, life.booted_at, life.stopped_at = True, now, None
        changes = []
        if not osd.up:
            osd.up = True
            life.down_at = None
            changes.append((osd_id, "up", "boot"))
        if not osd.in_ and life.auto_out:
            osd.in_, life.auto_out = True, False
            changes.append((osd_id, "in", "boot of an automatically marked-out OSD"))
        return self._change(changes, now)

    def mark_out(self, osd_id: int, now: float) -> list[MapChange]:
        osd = self.crush.osd(osd_id)
        if not osd.in_:
            return []
        osd.in_ = False
        self._life[osd_id].auto_out = False
        return self._change([(osd_id, "out", "operator")], now)

    def mark_in(self, osd_id: int, now: float) -> list[MapChange]:
        osd = self.crush.osd(osd_id)
        if osd.in_:
            return []
        osd.in_ = True
        self._life[osd_id].auto_out = False
        return self._change([(osd_id, "in", "operator")], now)

    def set_weight(self, osd_id: int, weight: float, now: float) -> list[MapChange]:
        self.crush.set_weight(osd_id, weight)
        return self._change([(osd_id, "weight", f"crush weight {weight:g}")], now)

    def set_flag(self, flag: str, on: bool = True) -> None:
        if flag not in ("noout", "nodown", "noup", "noin"):
            raise CephError("INVALID_ARGUMENT", f"unknown OSD map flag {flag!r}")
        (self.flags.add if on else self.flags.discard)(flag)

    # -- time --------------------------------------------------------------------------------

    def last_heartbeat(self, osd_id: int) -> float:
        """When peers last heard the (stopped) OSD: its last ping before it stopped."""
        life = self._life[osd_id]
        assert life.stopped_at is not None
        hb = self.timing.heartbeat_interval
        return life.booted_at + ((life.stopped_at - life.booted_at) // hb) * hb

    def down_detected_at(self, osd_id: int) -> float:
        return self.last_heartbeat(osd_id) + self.timing.heartbeat_grace

    def _mark_down(self, ids: list[int], now: float, reason: str) -> list[MapChange]:
        for i in ids:
            self.crush.osds[i].up = False
            self._life[i].down_at = now
        return self._change([(i, "down", reason) for i in ids], now)

    def tick(self, now: float) -> list[MapChange]:
        """Apply every transition due by `now`; returns the changes (one new epoch if any)."""
        changes: list[tuple[int, str, str]] = []
        for osd_id, life in sorted(self._life.items()):
            osd = self.crush.osds[osd_id]
            if osd.up and not life.running and "nodown" not in self.flags:
                if now >= self.down_detected_at(osd_id):
                    osd.up = False
                    life.down_at = now
                    changes.append((osd_id, "down", f"no heartbeat for {self.timing.heartbeat_grace:g} s"))
            if (not osd.up and osd.in_ and life.down_at is not None and "noout" not in self.flags
                    and now - life.down_at >= self.timing.down_out_interval):
                osd.in_, life.auto_out = False, True
                changes.append((osd_id, "out", f"down for {self.timing.down_out_interval:g} s"))
        return self._change(changes, now)

    def next_deadline(self, now: float) -> float | None:
        """The earliest future time at which `tick` would change something (for a daemon's timer)."""
        times = []
        for osd_id, life in self._life.items():
            osd = self.crush.osds[osd_id]
            if osd.up and not life.running:
                times.append(self.down_detected_at(osd_id))
            elif not osd.up and osd.in_ and life.down_at is not None:
                times.append(life.down_at + self.timing.down_out_interval)
        future = [t for t in times if t > now]
        return min(future) if future else None

    def down_since(self, osd_id: int) -> float | None:
        return self._lifeof(osd_id).down_at
