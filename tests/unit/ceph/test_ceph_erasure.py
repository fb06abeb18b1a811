"""Real 8+3 erasure coding: round trips from every set of up to 3 lost chunks, and 4 lost fails."""

from __future__ import annotations

import itertools
import random

import pytest

from services.ceph.erasure import ErasureCode
from services.ceph.errors import CephError, InsufficientChunks

MiB = 1 << 20


@pytest.fixture(scope="module")
def ec() -> ErasureCode:
    return ErasureCode(k=8, m=3)


def test_backend_is_isa_l_or_liberasurecode(ec: ErasureCode) -> None:
    assert ec.backend in ("isa_l_rs_vand", "liberasurecode_rs_vand")
    assert ec.overhead == 1.375


@pytest.mark.parametrize("stripe_unit", [4096, 512 * 1024])
def test_4mib_object_becomes_11_chunks_of_512kib(stripe_unit: int) -> None:
    ec = ErasureCode(8, 3, stripe_unit=stripe_unit)
    data = random.Random(1).randbytes(4 * MiB)
    chunks = ec.encode(data)
    assert len(chunks) == 11
    assert {len(c) for c in chunks} == {512 * 1024}
    assert sum(len(c) for c in chunks) == 1.375 * len(data)
    if stripe_unit == 512 * 1024:  # one stripe: data chunk j is the j-th 512 KiB of the object
        assert chunks[3] == data[3 * 512 * 1024 : 4 * 512 * 1024]
    else:  # Ceph's striping: chunk 1 starts with the object's second 4 KiB stripe unit
        assert chunks[1][:4096] == data[4096:8192]
        assert chunks[0][4096:8192] == data[8 * 4096 : 9 * 4096]


def test_every_loss_of_up_to_three_chunks_round_trips(ec: ErasureCode) -> None:
    data = random.Random(2).randbytes(300_001)  # not stripe-aligned: exercises padding
    chunks = ec.encode(data)
    cases = 0
    for lost in range(4):
        for gone in itertools.combinations(range(11), lost):
            have = {i: c for i, c in enumerate(chunks) if i not in gone}
            assert ec.decode(have, len(data)) == data, gone
            cases += 1
    assert cases == 1 + 11 + 55 + 165


@pytest.mark.parametrize("gone", [(0, 1, 2, 3), (8, 9, 10, 0), (1, 4, 7, 10)])
def test_four_lost_chunks_fail_naming_how_many(ec: ErasureCode, gone: tuple[int, ...]) -> None:
    data = random.Random(3).randbytes(10_000)
    chunks = ec.encode(data)
    with pytest.raises(InsufficientChunks) as e:
        ec.decode({i: c for i, c in enumerate(chunks) if i not in gone}, len(data))
    assert e.value.have == 7 and e.value.need == 8
    assert "4 of 11 chunks missing" in str(e.value) and "needs any 8" in str(e.value)


@pytest.mark.parametrize("size", [0, 1, 512 * 1024, 4 * MiB + 1])
def test_sizes_from_the_issue_survive_three_losses(ec: ErasureCode, size: int) -> None:
    data = random.Random(size).randbytes(size)
    chunks = ec.encode(data)
    assert ec.decode({i: chunks[i] for i in (0, 3, 4, 5, 6, 7, 9, 10)}, size) == data


def test_rebuild_recomputes_lost_chunks_exactly(ec: ErasureCode) -> None:
    data = random.Random(4).randbytes(70_000)
    chunks = ec.encode(data)
    have = {i: c for i, c in enumerate(chunks) if i not in (2, 8, 10)}
    assert ec.rebuild(have, len(data), [2, 8, 10]) == {2: chunks[2], 8: chunks[8], 10: chunks[10]}


def test_wrong_chunk_length_is_refused(ec: ErasureCode) -> None:
    chunks = ec.encode(b"x" * 100)
    bad = {i: c for i, c in enumerate(chunks)}
    bad[9] = chunks[9][:-1]
    with pytest.raises(CephError, match="chunk 9 has 4095 bytes"):
        ec.decode(bad, 100)


@pytest.mark.parametrize("size", [1, 4095, 32 * 1024 + 5, 4 * MiB - 1, 4 * MiB, 4 * MiB + 7])
def test_encode_lays_out_ceph_stripes_from_bytes_or_a_view(ec: ErasureCode, size: int) -> None:
    """Chunk j is stripe unit j of every stripe (the last stripe zero-padded), parity is pyeclib's over
    those chunks, and a memoryview of the data (how the gateway hands over its 4 MiB stripes) codes
    exactly as bytes do."""
    data = random.Random(size).randbytes(size)
    chunks = ec.encode(data)
    su, k = ec.stripe_unit, ec.k
    padded = data + bytes(ec.chunk_size(size) * k - size)
    stripes = len(padded) // (su * k)
    for j in range(k):
        assert chunks[j] == b"".join(padded[(s * k + j) * su: (s * k + j + 1) * su] for s in range(stripes))
    assert chunks == ec.encode(memoryview(b"xx" + data + b"yy")[2:-2])
    assert all(type(c) is bytes for c in chunks)
    lost = {i: c for i, c in enumerate(chunks) if i not in (1, 5, 9)}
    assert ec.decode(lost, size) == data


def test_tune_malloc_is_applied_once() -> None:
    from services.ceph.memtune import tune_malloc

    assert tune_malloc() in (True, False)  # True on glibc; a no-op elsewhere
    assert tune_malloc() == tune_malloc()


@pytest.mark.parametrize("size", [1, 4096, 32 * 1024 + 5, 4 * MiB - 1, 4 * MiB])
def test_decode_pieces_are_the_object_in_order_from_views_of_the_chunks(ec: ErasureCode, size: int) -> None:
    """What a big GET sends (gathered, not joined): the same bytes as `decode`, each piece a view of a
    data chunk (no copy), with all data chunks or after losing three."""
    data = random.Random(size).randbytes(size)
    chunks = dict(enumerate(ec.encode(data)))
    pieces = ec.decode_pieces(chunks, size)
    assert b"".join(pieces) == data == ec.decode(chunks, size)
    assert all(isinstance(p, memoryview) and len(p) <= ec.stripe_unit for p in pieces)
    assert any(p.obj is chunks[0] for p in pieces)   # views of the chunk itself
    lost = {i: c for i, c in chunks.items() if i not in (0, 5, 9)}
    assert b"".join(ec.decode_pieces(lost, size)) == data
