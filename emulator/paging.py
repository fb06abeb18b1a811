"""Pagination of the List RPCs (AIP-158 style): page_size 0 is the default, larger than the maximum
is capped, and page_token is opaque: the RPC that made it and the key of the last item it returned,
base64. The next page starts after that key, so a lease that ends (and drops out of the active
list) between two pages moves no other lease across the page boundary. Shared by every service's
List RPCs (gpu_node, fabric, ceph, lustre); a bad page_token or page_size is a DaemonError
INVALID_ARGUMENT. `every_page` is the client's side: each SDK follows the tokens through it.
"""

from __future__ import annotations

import base64
import binascii
import bisect
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from emulator.errors import DaemonError

DEFAULT_PAGE_SIZE = 100
MAX_PAGE_SIZE = 1000

T = TypeVar("T")
R = TypeVar("R")   # a List RPC's request message


def _token(rpc: str, last_key: int) -> str:
    return base64.urlsafe_b64encode(f"{rpc}:{last_key}".encode()).decode()


def _last_key(rpc: str, token: str) -> int:
    try:
        made_by, _, key = base64.urlsafe_b64decode(token.encode()).decode().partition(":")
        if made_by == rpc and key.isdigit():
            return int(key)
    except (binascii.Error, UnicodeDecodeError, ValueError):
        pass
    raise DaemonError("INVALID_ARGUMENT", f"{rpc}: invalid page_token {token!r}; pass the next_page_token of a "
                                          f"previous {rpc} response, or none for the first page")


def page(rpc: str, items: Sequence[T], page_size: int, page_token: str,
         key: Callable[[T], int] | None = None, keys: Sequence[int] | None = None) -> tuple[Sequence[T], str]:
    """One page of `items` and the token of the next ("" after the last page).

    `key` gives each item a number that grows along the list (a lease's sequence number); without
    it the position is the key, for lists that do not change between pages. `keys`: those numbers
    already computed, one per item (a large list paged many times: the page is found by bisection)."""
    if page_size < 0:
        raise DaemonError("INVALID_ARGUMENT", f"{rpc}: page_size must not be negative (got {page_size})")
    size = min(page_size or DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)
    if keys is None:
        keys = [key(x) for x in items] if key else list(range(len(items)))
    start = 0
    if page_token:
        start = bisect.bisect_right(keys, _last_key(rpc, page_token))
    end = start + size
    return items[start:end], _token(rpc, keys[end - 1]) if end < len(items) else ""


def listed(response: Callable[..., R], field: str, items: Sequence[T], request: Any, convert: Callable[[T], Any],
           key: Callable[[T], int] | None = None, **fields: Any) -> R:
    """A List RPC's response message: the page of `items` that `request` asks for, each item through
    `convert` into the repeated `field`, the next page's token, and `fields` beside. The page tokens
    are the RPC's, named by its response (`FabricListPortsResponse`: ListPorts)."""
    name = response.DESCRIPTOR.name  # type: ignore[attr-defined]
    rpc = name[name.index("List"):].removesuffix("Response")
    items, token = page(rpc, items, request.page_size, request.page_token, key=key)
    return response(**{field: [convert(x) for x in items]}, next_page_token=token, **fields)


def every_page(call: Callable[[R], Any], request: R, field: str) -> list[Any]:
    """Every item of a List RPC: `call(request)` page after page, following next_page_token (which the
    request's page_token carries back) until the last page; `field` is the reply's repeated field."""
    items: list[Any] = []
    while True:
        reply = call(request)
        items.extend(getattr(reply, field))
        if not reply.next_page_token:
            return items
        request.page_token = reply.next_page_token  # type: ignore[attr-defined]


def joined(call: Callable[[R], Any], request: R, one_page: bool | None = None) -> Any:
    """A List RPC's reply with every page in it: the first reply, the following pages' repeated fields
    appended. `one_page` (default: the request names a page_token) gets that one page, as asked."""
    reply = call(request)
    if "next_page_token" not in reply.DESCRIPTOR.fields_by_name:   # not a List RPC
        return reply
    if one_page if one_page is not None else request.page_token:  # type: ignore[attr-defined]
        return reply
    following = type(request)()
    following.CopyFrom(request)  # type: ignore[attr-defined]
    while reply.next_page_token:
        following.page_token = reply.next_page_token  # type: ignore[attr-defined]
        more = call(following)
        for field in reply.DESCRIPTOR.fields:
            if field.is_repeated:
                getattr(reply, field.name).extend(getattr(more, field.name))
        reply.next_page_token = more.next_page_token
    return reply
