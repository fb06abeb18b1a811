"""RGW users from a file given at start-up (`twin up --ceph --ceph-users FILE`).

The file is JSON or YAML: a list of users, or `{"users": [...]}`, each
`{uid, display_name, email?, tenant?, access_key, secret_key}` — the fields of `radosgw-admin user
create`. `load_users` checks everything before anything starts (`twin up` refuses a bad file and
starts nothing) and names the file, the entry and the field of each problem; the gateway daemon
creates the users through the monitor when it starts (again on a restart: a user already there
with the same keys is fine).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from emulator.errors import BadInput

REQUIRED = ("uid", "display_name", "access_key", "secret_key")
OPTIONAL = ("email", "tenant")


class UsersFileError(BadInput):
    pass


def _check(path: Path, i: int, u: Any) -> dict[str, str]:
    where = f"{path}: users[{i}]"
    if not isinstance(u, dict):
        raise UsersFileError(f"{where}: expected a mapping with {', '.join(REQUIRED)}, got {type(u).__name__}")
    unknown = sorted(set(u) - set(REQUIRED) - set(OPTIONAL))
    if unknown:
        raise UsersFileError(f"{where}: unknown field(s) {', '.join(unknown)}; "
                             f"allowed: {', '.join(REQUIRED + OPTIONAL)}")
    for f in REQUIRED:
        if not isinstance(u.get(f), str) or not u[f].strip():
            raise UsersFileError(f"{where}: {f} is required (a non-empty string)")
    for f in OPTIONAL:
        if f in u and not isinstance(u[f], str):
            raise UsersFileError(f"{where}: {f} must be a string")
    uid, tenant = u["uid"].strip(), u.get("tenant", "").strip()
    if any(ch in uid for ch in "$:/ ") or len(uid) > 64:
        raise UsersFileError(f"{where}: bad uid {uid!r}: 1-64 characters, none of '$', ':', '/', ' '")
    if tenant and not all(ch.isalnum() or ch in "_-" for ch in tenant):
        raise UsersFileError(f"{where}: bad tenant {tenant!r}: letters, digits, '_' and '-' only")
    return {"uid": uid, "display_name": u["display_name"].strip(), "email": u.get("email", "").strip(),
            "tenant": tenant, "access_key": u["access_key"].strip(), "secret_key": u["secret_key"].strip()}


def load_users(path: str | Path) -> list[dict[str, str]]:
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise UsersFileError(f"cannot read the Ceph users file {p}: {e.strerror or e}") from None
    try:
        doc = json.loads(text) if p.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as e:
        raise UsersFileError(f"{p}: not valid {'JSON' if p.suffix == '.json' else 'YAML/JSON'}: {e}") from None
    if isinstance(doc, dict) and set(doc) == {"users"}:
        doc = doc["users"]
    if not isinstance(doc, list):
        raise UsersFileError(f"{p}: expected a list of users (or {{users: [...]}}), got {type(doc).__name__}")
    users = [_check(p, i, u) for i, u in enumerate(doc)]
    seen_keys: dict[str, int] = {}
    seen_ids: dict[tuple[str, str], int] = {}
    for i, u in enumerate(users):
        if u["access_key"] in seen_keys:
            raise UsersFileError(f"{p}: users[{i}]: access_key {u['access_key']} is already used by "
                                 f"users[{seen_keys[u['access_key']]}]")
        ident = (u["tenant"], u["uid"])
        if ident in seen_ids:
            full = f"{u['tenant']}${u['uid']}" if u["tenant"] else u["uid"]
            raise UsersFileError(f"{p}: users[{i}]: user {full} is already defined by users[{seen_ids[ident]}]")
        seen_keys[u["access_key"]], seen_ids[ident] = i, i
    return users
