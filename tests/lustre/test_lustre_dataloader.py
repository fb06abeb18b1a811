"""A PyTorch-style data loader reads striped files through the mount, as training jobs do.

torch is not installed here, so this is what `torch.utils.data.DataLoader(dataset, batch_size=8,
shuffle=True, num_workers=4)` does, without torch: a map-style dataset (`__len__`, `__getitem__`,
each sample a fixed-size record at an offset of one of several striped shard files, the file opened
lazily in each worker and read with pread), a random permutation per epoch cut into batches, a pool of
4 worker processes each fetching whole batches, and the batches handed back in sampler order. Every
sample of two epochs is checked byte for byte. Samples straddle stripe boundaries (100 000-byte
records, 256 KiB stripes over 4 OSTs), so a single sample often comes from two OSTs."""

from __future__ import annotations

import multiprocessing
import os
import random
from pathlib import Path

from tests.lustre.conftest import LustreMount, needs_fuse, pattern

pytestmark = needs_fuse

SHARDS = 4
PER_SHARD = 96
SAMPLE = 100_000
STRIPE = 256 * 1024
BATCH = 8
WORKERS = 4


def expected(index: int) -> bytes:
    return pattern(SAMPLE, 10_000 + index)


class ShardDataset:
    """Map-style: sample i is record i % PER_SHARD of shard i // PER_SHARD."""

    def __init__(self, shard_paths: list[str]) -> None:
        self.paths = shard_paths
        self._fds: dict[int, int] = {}   # opened lazily, per process (a worker's own descriptors)

    def __len__(self) -> int:
        return len(self.paths) * PER_SHARD

    def __getitem__(self, index: int) -> bytes:
        if not 0 <= index < len(self):
            raise IndexError(index)
        shard, record = divmod(index, PER_SHARD)
        fd = self._fds.get(shard)
        if fd is None:
            fd = self._fds[shard] = os.open(self.paths[shard], os.O_RDONLY)
        data = os.pread(fd, SAMPLE, record * SAMPLE)
        if len(data) != SAMPLE:
            raise OSError(f"short read of sample {index}: {len(data)} bytes")
        return data

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()


_dataset: ShardDataset | None = None


def _worker_init(paths: list[str]) -> None:
    global _dataset
    _dataset = ShardDataset(paths)


def _fetch(batch: list[int]) -> tuple[int, list[int], list[bytes]]:
    """One batch in a worker: (worker pid, indices, collated samples)."""
    assert _dataset is not None
    return os.getpid(), batch, [_dataset[i] for i in batch]


def batches(n: int, seed: int) -> list[list[int]]:
    """RandomSampler + BatchSampler(drop_last=False)."""
    order = list(range(n))
    random.Random(seed).shuffle(order)
    return [order[i:i + BATCH] for i in range(0, n, BATCH)]


def test_dataloader_workers_read_every_sample_exactly(rack_lustre: LustreMount) -> None:
    m = rack_lustre
    data_dir = m.mnt / "train"
    data_dir.mkdir()
    m.cli("lustre", "lfs", "setstripe", "-c", "4", "-S", str(STRIPE), str(data_dir))   # inherited by the shards
    paths = []
    for s in range(SHARDS):
        p = data_dir / f"shard-{s:05d}.bin"
        with open(p, "wb") as f:
            for r in range(PER_SHARD):
                f.write(expected(s * PER_SHARD + r))
        paths.append(str(p))
    for p in paths:
        out = m.cli("lustre", "lfs", "getstripe", p).stdout
        assert "lmm_stripe_count:  4\n" in out and f"lmm_stripe_size:   {STRIPE}\n" in out

    dataset = ShardDataset(paths)
    assert len(dataset) == SHARDS * PER_SHARD
    assert dataset[len(dataset) - 1] == expected(len(dataset) - 1)   # in this process, too
    dataset.close()   # an open descriptor would keep the mount busy at unmount

    # forkserver: workers start from a clean process (this one may hold gRPC state, which fork breaks)
    ctx = multiprocessing.get_context("forkserver")
    with ctx.Pool(WORKERS, initializer=_worker_init, initargs=(paths,)) as pool:   # persistent workers
        for epoch in range(2):
            plan = batches(len(dataset), seed=epoch)
            seen: list[int] = []
            pids = set()
            for want, (pid, got_indices, samples) in zip(plan, pool.imap(_fetch, plan, chunksize=1), strict=True):
                assert got_indices == want              # batches come back in sampler order
                assert len(samples) == len(want)
                for i, sample in zip(want, samples, strict=True):
                    assert sample == expected(i), f"epoch {epoch}: sample {i} differs"
                seen += want
                pids.add(pid)
            assert sorted(seen) == list(range(len(dataset)))   # each sample exactly once per epoch
            assert len(pids) >= 2, "the batches were not spread over the workers"
    assert Path(paths[0]).stat().st_size == PER_SHARD * SAMPLE
