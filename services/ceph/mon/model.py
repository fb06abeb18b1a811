"""The monitor as a pure model: the `Cluster` (CRUSH and OSD map, pools, PGs, epochs), what the OSD
daemons told it (heartbeats, clean stops), the OSD fault log and the RGW users. Time is passed in;
nothing here locks, persists or publishes: the daemon does, with the events this model queues.

Liveness: an OSD silent for 1.5 heartbeat intervals has stopped; the map marks it down when Ceph's
grace runs out and out after `down_out_interval` (monitor.py). A clean stop is marked down at once,
and so is an OSD that failed a chunk call (the failure report Ceph's peers would send). A heartbeat
after it was marked down boots it: up, and in again if it was marked out automatically.
"""

from __future__ import annotations

import secrets
import string
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from services.ceph.cluster import Cluster
from services.ceph.errors import CephError
from services.ceph.monitor import MapChange
from services.ceph.pg import state_string

SILENT_AFTER = 1.5           # heartbeat intervals without a ping before an OSD counts as stopped
FAULT_KINDS = ("stop", "kill", "down", "slow", "corrupt", "out")


@dataclass
class Fault:
    """An OSD fault the twin's fault API applied (`twin fault inject osd.N ...`)."""

    id: str
    kind: str
    osd: int
    factor: float = 0.0
    pool: str = ""
    object: str = ""
    injected_at: float = 0.0
    active: bool = True
    cleared_at: float = 0.0
    effect: str = ""


@dataclass(frozen=True)
class User:
    """An RGW user (`radosgw-admin user create`)."""

    uid: str
    display_name: str
    email: str
    tenant: str
    access_key: str
    secret_key: str

    @property
    def full_id(self) -> str:
        return f"{self.tenant}${self.uid}" if self.tenant else self.uid


@dataclass(frozen=True)
class Event:
    """A bus event (emulator/events.py): its kind (events/ceph/<kind>), payload, twin time and message;
    `fault`: the fault record it carries, also retained on faults/ceph/<id> while active."""

    kind: str
    payload: dict[str, Any]
    time: float
    message: str
    fault: dict[str, Any] | None = None


def fault_record(f: Fault) -> dict[str, Any]:
    """The fault as the bus's fault record (emulator/events.py FaultPayload)."""
    params = {k: v for k, v in (("factor", f.factor), ("pool", f.pool), ("object", f.object)) if v}
    return {"id": f.id, "subsystem": "ceph", "target": f"osd.{f.osd}", "kind": f.kind, "params": params,
            "active": f.active, "injected_at": f.injected_at, "cleared_at": None if f.active else f.cleared_at,
            "effect": f.effect}


class MonModel:
    def __init__(self, cluster: Cluster, osds: Iterable[int], now: float, faults: Iterable[Fault] = (),
                 users: Iterable[User] = ()) -> None:
        self.cluster = cluster
        self.timing = cluster.monitor.timing
        ids = sorted(osds)
        # What the OSD daemons told the monitor of their processes (the map's own view is Monitor's).
        self.alive = {o: cluster.crush.osds[o].up for o in ids}
        self.last_hb = dict.fromkeys(ids, now)   # a restarted monitor gives everyone a grace ...
        self.started = now                       # ... of heartbeat_grace: OSDs reconnect with a backoff
        self.dead_since = dict.fromkeys(ids, 0.0)
        self.stopping: set[int] = set()
        self.faults = {f.id: f for f in faults}
        self.users = {u.access_key: u for u in users}
        self.events: list[Event] = []
        self._osd_view = {o.id: (o.up, o.in_) for o in cluster.crush.osds.values()}
        self._pg_view = {str(p): state_string(s) for p, s in cluster.pg_states().items()}

    def take_events(self) -> list[Event]:
        out, self.events = self.events, []
        return out

    # -- OSD liveness --------------------------------------------------------------------------

    def heartbeat(self, osd: int, stopping: bool, now: float) -> tuple[bool, bool, int]:
        """Only notes the ping (the next `tick` acts on it); returns the OSD's (up, in, epoch)."""
        if osd not in self.alive:
            raise CephError("NOT_FOUND", f"osd.{osd} is not in the map")
        if stopping:
            self.stopping.add(osd)
        else:
            self.last_hb[osd] = now
        o = self.cluster.crush.osds[osd]
        return o.up, o.in_, self.cluster.monitor.epoch

    def _down(self, osd: int, now: float, since: float | None = None, clean: bool = True) -> list[MapChange]:
        self.alive[osd], self.dead_since[osd] = False, now
        return self.cluster.osd_stopped(osd, now if since is None else since, clean=clean)

    def tick(self, now: float) -> list[MapChange]:
        """Heartbeats and silences since the last pass, then the map's own timers (down → out)."""
        changed: list[MapChange] = []
        silent = self.timing.heartbeat_interval * SILENT_AFTER
        for osd in sorted(self.alive):
            if osd in self.stopping:
                self.stopping.discard(osd)
                changed += self._down(osd, now)
            elif self.alive[osd] and now - self.last_hb[osd] > silent and \
                    now - self.started > self.timing.heartbeat_grace:
                changed += self._down(osd, now, since=self.last_hb[osd], clean=False)
            elif not self.alive[osd] and self.last_hb[osd] > self.dead_since[osd]:
                self.alive[osd] = True
                changed += self.cluster.osd_started(osd, now)
        return changed + self.cluster.tick(now)

    def osds_failed(self, osds: Iterable[int], now: float) -> list[int]:
        """OSDs that failed a chunk call are marked down at once; returns those that were up."""
        marked = [o for o in sorted(set(osds)) if self.alive.get(o) and self.cluster.crush.osds[o].up]
        for o in marked:
            self._down(o, now)
        return marked

    def osd_command(self, osd: int, command: str, now: float) -> str:
        """`ceph osd out|in|down ID`: the monitor's answer."""
        c = self.cluster
        o = c.crush.osd(osd)   # NOT_FOUND for an unknown id
        if command == "out":
            return f"marked out osd.{osd}. " if c.mark_out(osd, now) else f"osd.{osd} is already out. "
        if command == "in":
            return f"marked in osd.{osd}. " if c.mark_in(osd, now) else f"osd.{osd} is already in. "
        if command == "down":
            if not o.up:
                return f"osd.{osd} is already down. "
            self._down(osd, now)
            return f"marked down osd.{osd}. "
        raise CephError("INVALID_ARGUMENT", f"unknown osd command {command!r}; use out, in or down")

    # -- bus events ----------------------------------------------------------------------------

    def map_events(self, now: float) -> None:
        """Queue OSD up/down/in/out and PG state changes since the last call."""
        c = self.cluster
        for o in c.crush.osds.values():
            was = self._osd_view.get(o.id)
            if was is None or was == (o.up, o.in_):
                continue
            self._osd_view[o.id] = (o.up, o.in_)
            kinds = ([("osd_up" if o.up else "osd_down")] if was[0] != o.up else []) + \
                    ([("osd_in" if o.in_ else "osd_out")] if was[1] != o.in_ else [])
            for kind in kinds:
                self.events.append(Event(kind, {"node": "ceph", "osd": o.id, "host": o.host, "epoch": c.monitor.epoch},
                                         now, f"osd.{o.id} marked {kind[4:]}"))
        for pgid, st in c.pg_states().items():
            key, text = str(pgid), state_string(st)
            old = self._pg_view.get(key)
            if old != text:
                self._pg_view[key] = text
                self.events.append(Event("pg_state", {"node": "ceph", "pg": key, "from": old, "to": text,
                                                      "epoch": c.monitor.epoch}, now, f"pg {key}: {old} -> {text}"))

    def _fault_event(self, f: Fault, kind: str, now: float) -> None:
        message = f"osd.{f.osd} {f.kind}: {f.effect}" if kind == "fault" else f"osd.{f.osd} {f.kind} cleared"
        record = fault_record(f)
        self.events.append(Event(kind, {"node": "ceph", "osd": f.osd, "fault": record}, now, message, record))

    # -- the fault log -------------------------------------------------------------------------

    def record_fault(self, f: Fault, now: float) -> Fault:
        """Log a fault already applied; it gets an id (osd.N-<n>) unless it has one. A kill or a
        mark-down is over once it happened (the supervisor restarts the daemon; a running OSD's next
        heartbeat marks it up), so it is logged cleared."""
        if f.osd not in self.alive:
            raise CephError("NOT_FOUND", f"osd.{f.osd} does not exist")
        if f.kind not in FAULT_KINDS:
            raise CephError("INVALID_ARGUMENT", f"unknown OSD fault kind {f.kind!r}")
        if f.id in self.faults:
            raise CephError("ALREADY_EXISTS", f"fault {f.id} is already logged")
        n = 1 + sum(1 for x in self.faults.values() if x.osd == f.osd)
        done = f.kind in ("kill", "down")
        rec = Fault(id=f.id or f"osd.{f.osd}-{n}", kind=f.kind, osd=f.osd, factor=f.factor, pool=f.pool,
                    object=f.object, injected_at=now, active=not done, cleared_at=now if done else 0.0,
                    effect=f.effect)
        self.faults[rec.id] = rec
        self._fault_event(rec, "fault", now)
        return rec

    def clear_fault(self, fault_id: str, now: float) -> Fault:
        f = self.faults.get(fault_id)
        if f is None:
            raise CephError("NOT_FOUND", f"no Ceph fault {fault_id!r} (see `twin fault list`)")
        if not f.active:
            raise CephError("FAILED_PRECONDITION", f"fault {fault_id} is not active")
        f.active, f.cleared_at = False, now
        self._fault_event(f, "fault_clear", now)
        return f

    def list_faults(self, include_cleared: bool) -> list[Fault]:
        rows = sorted(self.faults.values(), key=lambda f: f.injected_at)
        return [f for f in rows if f.active or include_cleared]

    # -- RGW users -----------------------------------------------------------------------------

    def user_create(self, uid: str, display_name: str, email: str = "", tenant: str = "", access_key: str = "",
                    secret_key: str = "") -> User:
        """`radosgw-admin user create`, with its checks; keys are generated when not given."""
        uid, tenant = uid.strip(), tenant.strip()
        if not uid or any(ch in uid for ch in "$:/ ") or len(uid) > 64:
            raise CephError("INVALID_ARGUMENT", f"bad uid {uid!r}: 1-64 characters, none of '$', ':', '/', ' '")
        if tenant and not all(ch.isalnum() or ch in "_-" for ch in tenant):
            raise CephError("INVALID_ARGUMENT", f"bad tenant {tenant!r}: letters, digits, '_' and '-' only")
        if not display_name.strip():
            raise CephError("INVALID_ARGUMENT", "no display name specified (--display-name)")
        if bool(access_key) != bool(secret_key):
            raise CephError("INVALID_ARGUMENT", "give both --access-key and --secret, or neither")
        full = f"{tenant}${uid}" if tenant else uid
        if any(u.full_id == full for u in self.users.values()):
            raise CephError("ALREADY_EXISTS", f"could not create user: unable to create user, user: {full} exists")
        access = access_key or "".join(secrets.choice(string.ascii_uppercase + string.digits) for _ in range(20))
        secret = secret_key or "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(40))
        if access in self.users:
            raise CephError("ALREADY_EXISTS", f"could not create user: access key {access} is already in use")
        user = User(uid, display_name.strip(), email.strip(), tenant, access, secret)
        self.users[access] = user
        return user

    def list_users(self) -> list[User]:
        return sorted(self.users.values(), key=lambda u: (u.tenant, u.uid))
