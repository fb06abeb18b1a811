"""Pools, and the map from an object name to its placement group.

Defaults follow FIDELITY §4: the RGW data pool is erasure-coded k=8 m=3 on HDD with failure
domain host and `min_size` k+1 = 9; index, metadata and RBD pools are replicated size 3,
`min_size` 2, on SSD.

Object → PG is Ceph's: `ps = stable_mod(rjenkins(name), pg_num, pg_num_mask)`, and the CRUSH
input for PG `pool.ps` is `crush_hash32_2(ps, pool_id)` (`pg_pool_t::raw_pg_to_pps`, with
pgp_num = pg_num). A PG is named `<pool id>.<ps in hex>`, e.g. `5.1a`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Literal

from services.ceph.crush import DeviceClass, FailureDomain
from services.ceph.erasure import DEFAULT_STRIPE_UNIT, ErasureCode
from services.ceph.errors import CephError
from services.ceph.hashing import crush_hash32_2, pg_num_mask, stable_mod, str_hash_rjenkins
from services.ceph.replication import Replication

PoolType = Literal["erasure", "replicated"]
Codec = ErasureCode | Replication


@dataclass(frozen=True, order=True)
class PgId:
    pool: int
    ps: int

    def __str__(self) -> str:
        return self._text

    @cached_property
    def _text(self) -> str:  # every chunk key names its PG: formatted once
        return f"{self.pool}.{self.ps:x}"

    @classmethod
    def parse(cls, text: str) -> PgId:
        try:
            pool, ps = text.split(".")
            return cls(int(pool), int(ps, 16))
        except ValueError:
            raise CephError("INVALID_ARGUMENT", f"{text!r} is not a PG id like 5.1a") from None


@dataclass(frozen=True)
class Pool:
    id: int
    name: str
    type: PoolType
    size: int  # shards (k+m) or replicas
    min_size: int
    pg_num: int
    k: int  # chunks needed to read: k for EC, 1 for replicated
    device_class: DeviceClass | None
    failure_domain: FailureDomain = "host"
    stripe_unit: int = DEFAULT_STRIPE_UNIT
    application: str = ""

    @property
    def m(self) -> int:
        return self.size - self.k

    @property
    def erasure(self) -> bool:
        return self.type == "erasure"

    def codec(self) -> Codec:
        return ErasureCode(self.k, self.m, self.stripe_unit) if self.erasure else Replication(self.size)

    def pgs(self) -> list[PgId]:
        return [PgId(self.id, ps) for ps in range(self.pg_num)]

    def object_pg(self, name: str) -> PgId:
        return PgId(self.id, stable_mod(str_hash_rjenkins(name), self.pg_num, pg_num_mask(self.pg_num)))

    def crush_seed(self, pg: PgId) -> int:
        """The `x` CRUSH places this PG with."""
        return crush_hash32_2(pg.ps, self.id)


def _check(name: str, pg_num: int) -> None:
    if pg_num < 1:
        raise CephError("INVALID_ARGUMENT", f"pool {name}: pg_num must be ≥ 1, got {pg_num}")


def erasure_pool(
    pool_id: int, name: str, k: int = 8, m: int = 3, pg_num: int = 128, min_size: int | None = None,
    device_class: DeviceClass | None = "hdd", failure_domain: FailureDomain = "host",
    stripe_unit: int = DEFAULT_STRIPE_UNIT, application: str = "rgw",
) -> Pool:
    """An EC pool; `min_size` defaults to k+1 (Ceph's default since Octopus)."""
    _check(name, pg_num)
    ms = k + 1 if min_size is None else min_size
    if not k <= ms <= k + m:
        raise CephError("INVALID_ARGUMENT", f"pool {name}: min_size must be in {k}..{k + m}, got {ms}")
    return Pool(pool_id, name, "erasure", k + m, ms, pg_num, k, device_class, failure_domain, stripe_unit,
                application)


def replicated_pool(
    pool_id: int, name: str, size: int = 3, pg_num: int = 32, min_size: int | None = None,
    device_class: DeviceClass | None = "ssd", failure_domain: FailureDomain = "host", application: str = "rbd",
) -> Pool:
    """A replicated pool; `min_size` defaults to size − size/2 (2 for size 3), as Ceph's does."""
    _check(name, pg_num)
    ms = size - size // 2 if min_size is None else min_size
    if not 1 <= ms <= size:
        raise CephError("INVALID_ARGUMENT", f"pool {name}: min_size must be in 1..{size}, got {ms}")
    return Pool(pool_id, name, "replicated", size, ms, pg_num, 1, device_class, failure_domain,
                application=application)
