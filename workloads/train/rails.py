"""Which compute rails a real job's ranks talk over: pure, no I/O.

An HGX H100 server has one NIC per GPU, each on its own rail, and NCCL spreads a collective over
channels, each on a NIC. When NICs are down (a leaf switch lost takes half of them), NCCL uses the
ones left and the job's collectives slow. The twin's ranks (gloo over TCP) do the same:

- every rank finds which of its server's rails are up (the HCA port Active: the interface up with
  carrier); the ranks all-gather that at bootstrap, as NCCL's init exchanges its topology, and keep
  the rails up on every server, so that every connection has a live rail at both ends;
- the job's channels are the rails of its GPUs when those are up (rank i's GPU i uses NIC i), else
  other rails that are up; a server's ranks get `min(GPUs, rails) x up / rails` channels, rounded
  up: the share of the server's NICs its GPUs had, times the fraction still up (as the collective
  model, services/fabric/collectives.py, divides a server's NIC bandwidth);
- each channel is one gloo device (`GLOO_SOCKET_IFNAME=rail4,rail5`), and the ranks cut each
  collective they time into one piece per channel, in flight at once, as NCCL splits one over its
  channels.

Where this departs from NCCL: a job of fewer GPUs than NICs whose own NICs are down would still get
as many NICs on real hardware (on the other CPU socket, slower without GPUDirect RDMA); the twin
gives it fewer rails instead, the same bandwidth the model gives it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence


class NoRail(RuntimeError):
    """No compute rail is up on every server of the job: the ranks cannot reach each other."""


def common(per_rank: Iterable[Iterable[int]]) -> list[int]:
    """The rails up for every rank (each rank reports its own server's)."""
    sets = [set(r) for r in per_rank]
    if not sets:
        return []
    return sorted(set.intersection(*sets))


def channels(up: Sequence[int], per_server: int, rails: int) -> list[int]:
    """The rails the job's collectives go over, the job's own GPUs' rails first.

    `up`: the rails up on every server; `per_server`: ranks on each server (GPU i's rail is i mod
    `rails`)."""
    if not up:
        raise NoRail(f"no compute rail is up on every server of the job (of {rails})")
    if per_server < 1:
        raise ValueError(f"per_server must be at least 1, not {per_server}")
    own = sorted({i % rails for i in range(per_server)})
    count = max(1, -(-min(per_server, rails) * len(up) // rails))  # rounded up
    ranked = [r for r in own if r in up] + [r for r in sorted(up) if r not in own]
    return ranked[:count]
