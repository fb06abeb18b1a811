"""A UFM-shaped REST API over the fabric manager's state (a small asyncio HTTP/1.1 server: GET and
POST with a JSON body; no web framework).

Authentication as UFM does it on `/ufmRest`: HTTP basic auth, 401 with `WWW-Authenticate` without
it or with wrong credentials.

    GET  /ufmRest/resources/systems      [?type=switch|host]
    GET  /ufmRest/resources/ports        [?sys_type=Computer|Switch] [?system=NAME or system GUID]
    GET  /ufmRest/resources/links
    POST /ufmRest/actions                {"action": "disable"|"enable"|"port_disable"|"port_enable",
                                          "params": {"port_id": "<port name>"},
                                          "object_ids": [...], "object_type": "System"|"Port",
                                          "identifier": "id", "description": "..."}
                                         (the port is params.port_id, else object_ids[0] when
                                          object_type is "Port"); 202 with a completed job
    GET  /ufmRest/resources/pkeys        [?guids_data=true]   {"0x7fff": {"partition": ..., "ip_over_ib": ...}}
    GET  /ufmRest/resources/pkeys/<pkey> [?guids_data=true]
    POST /ufmRest/resources/pkeys/add    {"pkey": "0x12", "partition_name": ..., "ip_over_ib": ...}   (empty)
    POST /ufmRest/resources/pkeys        {"pkey": "0x12", "guids": [...], "membership": "full"|"limited"
                                          or "memberships": [...], "ip_over_ib": ...}   (add GUIDs)
    PUT  /ufmRest/resources/pkeys        (the same body: set exactly these GUIDs)
    POST /ufmRest/resources/pkeys/delete {"pkey": "0x12", "guids": [...]}   (remove GUIDs)
    DELETE /ufmRest/resources/pkeys/<pkey>
    GET  /ufmRest/app/events
    GET  /ufmRest/app/alarms             [/<id>]
    GET  /ufmRest/app/unhealthy_ports
    PUT  /ufmRest/app/unhealthy_ports    {"ports": [<port name>...], "ports_policy": "UNHEALTHY"|"HEALTHY",
                                          "action": "isolate"|"no_discover"}
    POST /ufmRest/actions                also {"action": "port_reset", "params": {"port_id": ...}} and
                                         "mark_unhealthy" / "mark_healthy" with the same params

JSON field names follow UFM's (ports: name, guid, system_name, systemID, node_description, number,
dname, description "Computer IB Port" / "Switch IB Port", physical_state, logical_state,
active_speed, active_width, lid, peer, peer_guid, peer_lid, peer_node_name, peer_node_guid,
peer_node_description, peer_port_dname, tier, severity; systems: system_name, guid, type, model,
vendor, ports, description; links: source_guid, source_port, source_port_node_description,
destination_*, width, severity; events: id, name, severity, timestamp, type, object_name,
object_path, description, category). Volcano's UFM topology discovery reads `description`,
`tier`, `system_name`, `node_description` and `peer_node_name` of the Computer ports: a host port's
peer_node_name is its leaf; tier is 1 for leaves (and the host ports that hang off them), 2 for
spines.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import hmac
import json
from typing import Any
from urllib.parse import parse_qs, urlsplit

from emulator.http_endpoint import HttpError, Request, Response, serve_app
from services.fabric.errors import FabricError, FabricInvalid, FabricNotFound
from services.fabric.manager import FabricManager

PREFIX = "/ufmRest"
JSON = "application/json"
ACTIONS = {"disable": False, "port_disable": False, "enable": True, "port_enable": True}
OTHER_ACTIONS = ("port_reset", "mark_unhealthy", "mark_healthy")
CACHED = ("/resources/systems", "/resources/ports", "/resources/links")   # views that change only with the fabric
TIER = {"leaf": 1, "spine": 2}


def _iso(t: float) -> str:
    return datetime.datetime.fromtimestamp(t, datetime.UTC).strftime("%Y-%m-%d %H:%M:%S")


def ufm_port(p: dict[str, Any]) -> dict[str, Any]:
    host = p["computer"]
    dname = f"{p['node'].split(' ', 1)[-1]}/{p['number']}" if host else str(p["number"])
    peer_dname = str(p["peer_port"]) if host else f"{p['peer_node'].split(' ', 1)[-1]}/{p['peer_port']}"
    if not host and p["peer_role"]:
        peer_dname = str(p["peer_port"])
    tier = TIER.get(p["peer_role"] if host else p["role"], 0)
    return {
        "name": p["name"], "guid": p["guid"], "system_name": p["system"], "systemID": p["system_guid"],
        "node_description": p["node"], "number": p["number"], "external_number": p["number"], "dname": dname,
        "description": "Computer IB Port" if host else "Switch IB Port",
        "physical_state": p["physical_state"], "logical_state": p["logical_state"],
        "active_speed": p["active_speed"], "active_width": p["active_width"], "lid": p["lid"], "mtu": 4096,
        "peer": p["peer_guid"] and f"{p['peer_guid']}_{p['peer_port']}", "peer_guid": p["peer_guid"],
        "peer_lid": p["peer_lid"], "peer_node_name": p["peer_system"], "peer_node_guid": p["peer_node_guid"],
        "peer_node_description": p["peer_node"], "peer_port_dname": peer_dname, "tier": tier,
        "severity": "Info" if p["logical_state"] == "Active" else "Critical",
        "module": "", "path": f"default / {p['system']} / {dname}", "capabilities": [],
        "disabled": p["disabled"],
    }


def ufm_system(s: dict[str, Any]) -> dict[str, Any]:
    return {"system_name": s["name"], "name": s["guid"], "guid": s["guid"], "system_guid": s["guid"],
            "type": s["type"], "model": s["model"], "vendor": s["vendor"], "description": s["description"],
            "ports": s["ports"], "technology": "InfiniBand", "ip": "0.0.0.0", "state": "active",
            "severity": "Info", "role": s["role"], "tier": TIER.get(s["role"], 0)}


def ufm_link(lk: dict[str, Any]) -> dict[str, Any]:
    return {"name": f"{lk['source_guid']}_{lk['source_port']}:{lk['destination_guid']}_{lk['destination_port']}",
            "source_guid": lk["source_node_guid"], "source_port": lk["source_port"],
            "source_port_node_description": lk["source_node"],
            "destination_guid": lk["destination_node_guid"], "destination_port": lk["destination_port"],
            "destination_port_node_description": lk["destination_node"],
            "width": "IB_4x" if lk["active"] else "", "speed": lk["speed"], "capabilities": [],
            "severity": "Info" if lk["active"] else "Critical", "state": "Active" if lk["active"] else "Down"}


def ufm_alarm(a: dict[str, Any]) -> dict[str, Any]:
    return {"id": a["id"], "type": a["type"], "name": a["name"], "description": a["description"],
            "reason": a["reason"], "severity": a["severity"], "timestamp": _iso(a["time"]),
            "counter": "N/A", "event_count": a["event_count"], "object_name": a["object_name"],
            "object_path": a["object_path"]}


def ufm_unhealthy(u: dict[str, Any]) -> dict[str, Any]:
    return {"UnhealthyPort": u["name"], "UnhealthyNode": u["node"], "UnhealthyPortNumber": u["port"],
            "UnhealthyGUID": u["name"].split("_", 1)[0], "PeerNode": u["peer_node"], "PeerPortNumber": u["peer_port"],
            "Condition": [u["condition"]], "State": "Warning", "Action": u["action"],
            "StatusTime": datetime.datetime.fromtimestamp(u["time"], datetime.UTC).strftime("%a %b %d %H:%M:%S %Y")}


EVENT_NAMES = {"port_down": "Port Down", "port_up": "Port Up", "sharp_job_created": "SHARP Job Started",
               "sharp_job_released": "SHARP Job Ended", "sharp_tree_moved": "SHARP Tree Rebuilt",
               "sharp_tree_recovered": "SHARP Tree Rebuilt", "sharp_tree_error": "SHARP Tree Error"}


def ufm_event(ev: dict[str, Any]) -> dict[str, Any]:
    port = "port_name" in ev
    path = f"default / {ev['system']} / {ev['node']} / {ev['port']}" if port else f"default / {ev['system']}"
    return {"id": ev["seq"], "name": EVENT_NAMES.get(ev["kind"], ev["kind"]), "event_type": ev["kind"],
            "severity": ev["severity"], "timestamp": _iso(ev["time"]), "type": "Port" if port else "SHARP",
            "object_name": ev["port_name"] if port else ev["system"], "object_path": path,
            "description": ev["message"], "category": "Hardware" if port else "Fabric", "write_to_syslog": False}


class UfmRest:
    def __init__(self, manager: FabricManager, user: str, password: str) -> None:
        self.m = manager
        self._auth = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
        self._cache: dict[tuple[str, tuple[tuple[str, str], ...]], tuple[int, bytes]] = {}

    async def respond(self, request: Request) -> Response:
        """One request, as the HTTP server hands it over. A refusal of the fabric (FabricError) becomes
        its HTTP status here, and only here."""
        try:
            status, doc = await self.handle(request.method, request.target, request.headers, request.body)
        except FabricError as e:
            raise HttpError(e.http_status, e.detail) from None
        return Response(status, doc if isinstance(doc, bytes) else json.dumps(doc).encode(), JSON)

    async def handle(self, method: str, target: str, headers: dict[str, str], body: bytes) -> tuple[int, Any]:
        url = urlsplit(target)
        path = url.path.rstrip("/")
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        if not path.startswith(PREFIX + "/") and path != PREFIX:
            raise HttpError(404, f"no such path {path}: the API is under {PREFIX}")
        if not hmac.compare_digest(headers.get("authorization", "").encode(), self._auth.encode()):
            raise HttpError(401, "authentication required (HTTP basic auth)", {"WWW-Authenticate": 'Basic realm="UFM"'})
        route = path.removeprefix(PREFIX)
        gets = {"/resources/systems": self.systems, "/resources/ports": self.ports,
                "/resources/links": self.links, "/app/events": self.events, "/app/alarms": self.alarm_list,
                "/app/unhealthy_ports": self.unhealthy_list}
        posts = {"/actions": self.action, "/resources/pkeys": self.pkey_add_guids,
                 "/resources/pkeys/add": self.pkey_create, "/resources/pkeys/delete": self.pkey_remove_guids}
        puts = {"/app/unhealthy_ports": self.unhealthy_set, "/resources/pkeys": self.pkey_set_guids}
        deletes: dict[str, Any] = {}
        gets["/resources/pkeys"] = self.pkey_list
        if route.startswith("/app/alarms/"):
            gets[route] = lambda q: self.alarm_one(route.rsplit("/", 1)[1])
        if route.startswith("/resources/pkeys/") and route not in posts:
            key = route.rsplit("/", 1)[1]
            gets[route] = lambda q: self.pkey_one(key, q)
            deletes[route] = lambda doc: self.pkey_delete(key)
        tables = ((gets, "GET"), (posts, "POST"), (puts, "PUT"), (deletes, "DELETE"))
        for table, name in tables:
            if method == name and route in table:
                if name == "GET" and route in CACHED:
                    return 200, self._cached(route, query, gets[route])
                if name == "GET":
                    return 200, table[route](query)
                return await table[route](self._json(body) if name != "DELETE" else {})
        allowed = [m for table, m in tables if route in table]
        if allowed:
            raise HttpError(405, f"{path} takes {' or '.join(allowed)}")
        known = sorted({*gets, *posts, *puts} - {route})
        raise HttpError(404, f"no such resource {path}; try {', '.join(PREFIX + r for r in known)}")

    def _cached(self, route: str, query: dict[str, str], view: Any) -> bytes:
        """The encoded answer of a resource view, kept until the fabric is next read back: a fabric
        of 1024 HCAs answers /resources/ports from memory, not by rebuilding 4096 port views."""
        key = (route, tuple(sorted(query.items())))
        hit = self._cache.get(key)
        if hit is None or hit[0] != self.m.version:
            if len(self._cache) > 256:
                self._cache.clear()
            hit = self._cache[key] = (self.m.version, json.dumps(view(query)).encode())
        return hit[1]

    @staticmethod
    def _json(body: bytes) -> dict[str, Any]:
        try:
            doc = json.loads(body or b"null")
        except (ValueError, UnicodeDecodeError) as e:
            raise HttpError(400, f"body is not JSON: {e}") from None
        if not isinstance(doc, dict):
            raise HttpError(400, "body must be a JSON object")
        return doc

    def systems(self, q: dict[str, str]) -> list[dict[str, Any]]:
        kind = q.get("type", "").lower()
        return [ufm_system(s) for s in self.m.systems(kind)]

    def ports(self, q: dict[str, str]) -> list[dict[str, Any]]:
        sys_type = q.get("sys_type", "")
        if sys_type and sys_type.lower() not in ("computer", "switch"):
            raise FabricInvalid(f"sys_type {sys_type!r}: use Computer or Switch")
        system = q.get("system", "")
        if system:   # a name, or a system GUID as UFM's own clients pass it
            by_guid = {s["guid"]: s["name"] for s in self.m.systems()}
            system = by_guid.get(system.lower(), system)
        ports = self.m.ports(system, computer_only=sys_type.lower() == "computer")
        if sys_type.lower() == "switch":
            ports = [p for p in ports if not p["computer"]]
        return [ufm_port(p) for p in ports]

    def links(self, q: dict[str, str]) -> list[dict[str, Any]]:
        return [ufm_link(lk) for lk in self.m.links()]

    def events(self, q: dict[str, str]) -> list[dict[str, Any]]:
        return [ufm_event(ev) for ev in self.m.events]

    # --- PKeys (UFM's PKey GUIDs API) -------------------------------------------------------------

    @staticmethod
    def _pkey(value: Any) -> int:
        if isinstance(value, str):
            try:
                pkey = int(value, 16) if value.lower().startswith("0x") else int(value, 16)
            except ValueError:
                raise FabricInvalid(f"pkey {value!r} is not a hexadecimal string such as '0x0a12'") from None
        else:
            raise FabricInvalid("'pkey' must be a hexadecimal string such as '0x0a12'")
        if not 0 < pkey < 0x7FFF:
            raise FabricInvalid(f"pkey {value!r} must be between 0x0 and 0x7fff exclusive")
        return pkey

    @staticmethod
    def _pkey_doc(p: dict[str, Any], guids: bool) -> dict[str, Any]:
        doc: dict[str, Any] = {"partition": p["name"], "ip_over_ib": p["ip_over_ib"]}
        if guids:
            doc["guids"] = [{"guid": m["guid"], "membership": m["membership"], "index0": False}
                            for m in p["members"]]
        return doc

    def pkey_list(self, q: dict[str, str]) -> dict[str, Any]:
        guids = q.get("guids_data", "").lower() == "true"
        return {f"{p['pkey']:#x}": self._pkey_doc(p, guids) for p in self.m.partitions()}

    def pkey_one(self, key: str, q: dict[str, str]) -> dict[str, Any]:
        try:
            pkey = int(key, 16)
        except ValueError:
            raise FabricInvalid(f"pkey {key!r} is not hexadecimal") from None
        return self._pkey_doc(self.m.partition(pkey), q.get("guids_data", "").lower() == "true")

    def _guids(self, doc: dict[str, Any]) -> list[tuple[str, str]]:
        guids = doc.get("guids")
        if not isinstance(guids, list) or not all(isinstance(g, str) for g in guids):
            raise FabricInvalid("'guids' must be a list of port GUIDs (hexadecimal strings)")
        memberships = doc.get("memberships")
        if memberships is None:
            memberships = [doc.get("membership", "full")] * len(guids)
        if not isinstance(memberships, list) or len(memberships) != len(guids):
            raise FabricInvalid("'memberships' must list one membership per GUID")
        return [(g.lower().removeprefix("0x"), str(m)) for g, m in zip(guids, memberships, strict=True)]

    def _current(self, pkey: int) -> dict[str, Any] | None:
        try:
            return self.m.partition(pkey)
        except FabricNotFound:
            return None

    async def _set(self, doc: dict[str, Any], members: list[tuple[str, str]], current: dict[str, Any] | None
                   ) -> tuple[int, Any]:
        pkey = self._pkey(doc.get("pkey"))
        name = str(doc.get("partition_name") or (current["name"] if current else ""))
        ipoib = bool(doc.get("ip_over_ib", current["ip_over_ib"] if current else True))
        p = await self.m.set_partition(pkey, members, name, ipoib)
        return 200, self._pkey_doc(p, True)

    async def pkey_create(self, doc: dict[str, Any]) -> tuple[int, Any]:
        pkey = self._pkey(doc.get("pkey"))
        if self._current(pkey) is not None:
            raise FabricError(f"pkey {pkey:#x} already exists", "ALREADY_EXISTS")
        return await self._set(doc, [], None)

    async def pkey_add_guids(self, doc: dict[str, Any]) -> tuple[int, Any]:
        current = self._current(self._pkey(doc.get("pkey")))
        new = self._guids(doc)
        keep = [(m["guid"], m["membership"]) for m in (current["members"] if current else [])
                if m["guid"] not in {g for g, _ in new}]
        return await self._set(doc, keep + new, current)

    async def pkey_set_guids(self, doc: dict[str, Any]) -> tuple[int, Any]:
        return await self._set(doc, self._guids(doc), self._current(self._pkey(doc.get("pkey"))))

    async def pkey_remove_guids(self, doc: dict[str, Any]) -> tuple[int, Any]:
        pkey = self._pkey(doc.get("pkey"))
        current = self.m.partition(pkey)
        gone = {g for g, _ in self._guids(doc)}
        missing = gone - {m["guid"] for m in current["members"]}
        if missing:
            raise FabricInvalid(f"not members of pkey {pkey:#x}: {', '.join(sorted(missing))}")
        keep = [(m["guid"], m["membership"]) for m in current["members"] if m["guid"] not in gone]
        return await self._set(doc, keep, current)

    async def pkey_delete(self, key: str) -> tuple[int, Any]:
        try:
            pkey = int(key, 16)
        except ValueError:
            raise FabricInvalid(f"pkey {key!r} is not hexadecimal") from None
        p = await self.m.delete_partition(pkey)
        return 200, self._pkey_doc(p, True)

    # --- alarms and unhealthy ports ----------------------------------------------------------------

    def alarm_list(self, q: dict[str, str]) -> list[dict[str, Any]]:
        return [ufm_alarm(a.to_dict()) for a in self.m.alarms.list()]

    def alarm_one(self, ident: str) -> dict[str, Any]:
        alarm = self.m.alarms.get(int(ident)) if ident.isdigit() else None
        if alarm is None:
            raise FabricNotFound(f"no alarm {ident!r}")
        return ufm_alarm(alarm.to_dict())

    def unhealthy_list(self, q: dict[str, str]) -> list[dict[str, Any]]:
        return [ufm_unhealthy(u) for u in self.m.unhealthy_ports()]

    async def unhealthy_set(self, doc: dict[str, Any]) -> tuple[int, Any]:
        ports = doc.get("ports")
        if not isinstance(ports, list) or not ports or not all(isinstance(p, str) for p in ports):
            raise FabricInvalid("'ports' must be a non-empty list of port names ('<port guid>_<number>')")
        policy = str(doc.get("ports_policy", "")).upper()
        if policy not in ("HEALTHY", "UNHEALTHY"):
            raise FabricInvalid(f"ports_policy {doc.get('ports_policy')!r}: use HEALTHY or UNHEALTHY")
        action = doc.get("action", "isolate")
        if not isinstance(action, str):
            raise FabricInvalid("'action' must be 'isolate' or 'no_discover'")
        now = await self.m.set_port_health(ports, policy == "HEALTHY", action)
        return 200, [ufm_unhealthy(u) for u in now]

    async def action(self, doc: dict[str, Any]) -> tuple[int, Any]:
        action = doc.get("action")
        if action not in ACTIONS and action not in OTHER_ACTIONS:
            raise FabricInvalid(f"action {action!r} is not supported: use one of "
                                 f"{', '.join(sorted([*ACTIONS, *OTHER_ACTIONS]))}")
        params = doc.get("params") or {}
        if not isinstance(params, dict):
            raise FabricInvalid("'params' must be an object")
        port_id = params.get("port_id")
        if not port_id and str(doc.get("object_type", "")).lower() == "port":
            ids = doc.get("object_ids") or []
            port_id = ids[0] if isinstance(ids, list) and ids else None
        if not isinstance(port_id, str) or not port_id:
            raise FabricInvalid("which port? give params.port_id (a port name, '<port guid>_<number>')")
        if action in ("mark_unhealthy", "mark_healthy"):
            now = await self.m.set_port_health([port_id], action == "mark_healthy", str(params.get("action") or ""))
            return 202, {"status": "Completed", "action": action, "object_ids": [port_id],
                         "unhealthy_ports": [ufm_unhealthy(u) for u in now]}
        if action == "port_reset":
            r = await self.m.reset_port(port_id, 0)
        else:
            r = await self.m.set_port_state(port_id, 0, ACTIONS[action])
        return 202, {"status": "Completed", "action": action, "object_ids": [port_id],
                     "description": doc.get("description", ""), "changed": r["changed"],
                     "summary": f"port {port_id} ({r['port']['node']} port {r['port']['number']}) is "
                                f"{r['port']['logical_state']}", "port": ufm_port(r["port"])}


def error_page(e: HttpError) -> Response:
    return Response(e.status, json.dumps({"error": e.message}).encode(), JSON, e.headers)


async def serve(rest: UfmRest, host: str, port: int) -> asyncio.Server:
    return await serve_app(host, port, rest.respond, error_page)
