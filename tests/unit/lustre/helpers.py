"""Small filesystems for the Lustre model tests."""

from __future__ import annotations

from services.lustre.namespace import Namespace
from services.lustre.ost import OstState, TiB


def make_osts(n: int = 4, per_oss: int = 2, capacity: int = 4 * TiB) -> list[OstState]:
    return [OstState(i, f"oss{i // per_oss + 1}", capacity) for i in range(n)]


def make_ns(n: int = 4, per_oss: int = 2) -> Namespace:
    return Namespace("testfs", make_osts(n, per_oss), now=0.0)
