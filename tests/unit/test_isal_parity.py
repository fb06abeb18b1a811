"""EC parity from ISA-L through ctypes (services/ceph/isal.py) is pyeclib's, byte for byte: what a
gateway writes with it, pyeclib decodes after any three chunks are lost."""

from __future__ import annotations

import os

import pytest

from services.ceph.erasure import ErasureCode


@pytest.fixture(scope="module")
def codes() -> tuple[ErasureCode, ErasureCode]:
    fast = ErasureCode(8, 3)
    plain = ErasureCode(8, 3)
    plain._parity = None   # pyeclib's own encode
    return fast, plain


def test_the_isa_l_path_is_taken(codes: tuple[ErasureCode, ErasureCode]) -> None:
    fast, _ = codes
    assert fast.backend == "isa_l_rs_vand" and fast._parity is not None


@pytest.mark.parametrize("size", [1, 100, 4096, 32768, 32769, 123_457, (4 << 20) - 3, 4 << 20])
def test_parity_is_pyeclibs_and_decodes_after_three_losses(codes: tuple[ErasureCode, ErasureCode], size: int) -> None:
    fast, plain = codes
    data = os.urandom(size)
    chunks = fast.encode(data)
    assert chunks == plain.encode(data)
    views = fast.encode(data, views=True)
    assert [bytes(c) for c in views] == chunks
    for lost in [(0, 1, 2), (0, 5, 10), (8, 9, 10), (2, 7, 9)]:
        assert plain.decode({i: c for i, c in enumerate(chunks) if i not in lost}, size) == data
