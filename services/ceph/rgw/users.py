"""RGW users and their S3 keys, as `radosgw-admin user create` makes them, or from a JSON file.

A user in a tenant is named `tenant$uid`; buckets live in their owner's tenant namespace.
The file is a JSON list of objects with `uid`, `access_key`, `secret_key` and optionally
`display_name`, `tenant` and `email`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class User:
    uid: str
    display_name: str
    access_key: str
    secret_key: str
    tenant: str = ""
    email: str = ""

    @property
    def id(self) -> str:
        return f"{self.tenant}${self.uid}" if self.tenant else self.uid


ANONYMOUS = User("anonymous", "anonymous", "", "")  # who an unsigned request is (RGW's anonymous user)


class Users:
    def __init__(self, users: list[User] | None = None) -> None:
        self._by_key: dict[str, User] = {}
        for u in users or []:
            self.add(u)

    def add(self, user: User) -> User:
        if user.access_key in self._by_key:
            raise ValueError(f"access key {user.access_key} already belongs to {self._by_key[user.access_key].id}")
        self._by_key[user.access_key] = user
        return user

    def by_key(self, access_key: str) -> User | None:
        return self._by_key.get(access_key)

    def all(self) -> list[User]:
        return list(self._by_key.values())

    def secret_of(self, access_key: str) -> str | None:
        u = self._by_key.get(access_key)
        return u.secret_key if u else None

    @classmethod
    def load(cls, path: Path) -> Users:
        rows = json.loads(path.read_text())
        return cls([User(r["uid"], r.get("display_name", r["uid"]), r["access_key"], r["secret_key"],
                         r.get("tenant", ""), r.get("email", "")) for r in rows])
