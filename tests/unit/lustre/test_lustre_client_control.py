"""The mount's parameter socket (services/lustre/client/control.py: answer): what lctl asks of a live
client, and a bad request refused with nothing changed."""

from __future__ import annotations

from services.lustre.client.control import answer
from services.lustre.client.stats import Stats
from services.lustre.client.tunables import Registry, Tunables


def registry() -> Registry:
    return Registry(Tunables(), "hot", [0, 1], "ffff0123456789ab")


def test_an_mdt_parameter_reaches_the_mount() -> None:
    seen: list[tuple[str, int]] = []
    r = answer(registry(), Stats(), {"op": "mdt_param", "name": "mdd.hot-MDT0000.atime_diff", "value": 0},
               lambda n, v: seen.append((n, v)))
    assert r == {} and seen == [("mdd.hot-MDT0000.atime_diff", 0)]


def test_a_bad_mdt_parameter_request_is_refused_and_changes_nothing() -> None:
    seen: list[tuple[str, int]] = []
    for req in ({"op": "mdt_param", "name": "mdd.hot-MDT0000.atime_diff"},
                {"op": "mdt_param", "name": "mdd.hot-MDT0000.atime_diff", "value": "soon"}):
        r = answer(registry(), Stats(), req, lambda n, v: seen.append((n, v)))
        assert r["error"] == "EINVAL", req
    assert seen == []
    # a mount that does not take them (no callback) refuses the request as unknown
    r = answer(registry(), Stats(), {"op": "mdt_param", "name": "mdd.hot-MDT0000.atime_diff", "value": 1})
    assert r["error"] == "EINVAL" and "unknown request" in r["message"]
