"""One rank of `twin train --real`: what torchrun starts on each GPU server, once per leased GPU.

A real data-parallel PyTorch job, scaled down: a small MLP under DistributedDataParallel on the gloo
backend. Why it looks like this:
- The ranks talk over the compute rails (rails.py): at bootstrap they all-gather which rails are up
  on their servers, as NCCL's init does, and take one gloo device per channel, the job's own GPUs'
  rails first (GPU i's NIC is rail i). Every byte between servers crosses the twin's shaped fabric (a
  connection leaves by the rail of the address it goes to); with a leaf switch down the ranks use
  the rails left, fewer of them, and the all-reduce slows.
- Batches come from the dataset directory when one is given (files read whole and turned into
  inputs, as a loader reads staged shards), else from a seeded generator.
- Rank 0 writes a checkpoint every `--checkpoint-every` steps (torch.save to a temporary name, then
  rename: a reader never sees half a file) and every rank starts from the newest one, so a group
  torchrun's elastic agent restarts continues where the last checkpoint left it.
- Rank 0 appends its progress as JSON lines to `--events` (wall-clock `t`): the launcher reads the
  figures from it. Before training, the ranks time `--allreduce-bytes` all-reduces.
- Every rank checks its GPU through NVML (gpu_health.py) before it joins the group and every
  `--health-every` steps. NVML_ERROR_GPU_IS_LOST (Xid 79) stops the rank: it appends a `gpu_lost`
  event (any rank may) and exits 1, and torchrun's elastic agent does what it does with a failed
  worker.
"""

from __future__ import annotations

import argparse
import faulthandler
import fcntl
import json
import os
import socket
import statistics
import struct
import sys
import time
import warnings
from datetime import timedelta
from pathlib import Path

warnings.filterwarnings("ignore", message="Failed to initialize NumPy")  # NumPy is not needed here

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402

from workloads.train import rails as rail_plan  # noqa: E402
from workloads.train.gpu_health import GpuHealth, GpuLost  # noqa: E402

RAILS = 8
FEATURES = 64
SIOCGIFFLAGS = 0x8913
IFF_UP, IFF_RUNNING = 0x1, 0x40
IFREQ = "16sH22x"  # struct ifreq: the name, then ifr_flags in the union


def _args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--checkpoint-every", type=int, default=0)
    p.add_argument("--checkpoint-dir", required=True)
    p.add_argument("--dataset", default="")
    p.add_argument("--events", required=True)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--allreduce-bytes", type=int, default=1 << 20)
    p.add_argument("--allreduce-iters", type=int, default=5)
    p.add_argument("--timeout", type=float, default=30.0, help="gloo's collective timeout, seconds")
    p.add_argument("--hidden", type=int, default=256, help="MLP width")
    p.add_argument("--rails", type=int, default=RAILS, help="compute rails per server (0: let gloo choose)")
    p.add_argument("--step-sleep", type=float, default=0.0, help="seconds of stand-in compute per step")
    p.add_argument("--health-every", type=int, default=10, help="steps between NVML checks of the GPU (0: none)")
    a = p.parse_args()
    if a.health_every < 0:
        p.error(f"--health-every {a.health_every}: 0 (no checks) or more steps")
    return a


class Events:
    """Rank 0's progress, one JSON object a line, flushed at once (the launcher tails it)."""

    def __init__(self, path: str, rank: int) -> None:
        self.f = open(path, "a") if rank == 0 else None  # noqa: SIM115 - open for the run

    def __call__(self, kind: str, **detail: object) -> None:
        if self.f is not None:
            self.f.write(json.dumps({"t": time.time(), "kind": kind, **detail}) + "\n")
            self.f.flush()


def gpu_lost(path: str, health: GpuHealth, why: GpuLost) -> int:
    """Any rank's last word: one line appended in one write (O_APPEND: whole among the others)."""
    line = json.dumps({"t": time.time(), "kind": "gpu_lost", "rank": int(os.environ.get("RANK", "-1")),
                       "local_rank": int(os.environ["LOCAL_RANK"]), "server": os.environ.get("TWIN_SERVER", ""),
                       "device": health.device, "error": str(why)})
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)
    print(f"rank {os.environ.get('RANK')}: {why}; stopping", flush=True)
    return 1


def _model(hidden: int) -> torch.nn.Module:
    torch.manual_seed(0)  # same initial weights on every rank
    return torch.nn.Sequential(torch.nn.Linear(FEATURES, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, hidden),
                               torch.nn.ReLU(), torch.nn.Linear(hidden, 1))


def _batch(step: int, rank: int, batch: int, files: list[Path]) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs for (step, rank): bytes of a dataset file when there are files, else seeded noise."""
    if files:
        raw = files[(step * 7919 + rank) % len(files)].read_bytes()
        need = batch * FEATURES
        data = (raw * (need // max(1, len(raw)) + 1))[:need]
        x = torch.frombuffer(bytearray(data), dtype=torch.uint8).float().view(batch, FEATURES) / 255.0
    else:
        g = torch.Generator().manual_seed(step * 100_003 + rank)
        x = torch.rand(batch, FEATURES, generator=g)
    return x, x.sum(dim=1, keepdim=True) / FEATURES  # a target the model can learn


def _latest(ckdir: Path) -> Path | None:
    done = sorted(ckdir.glob("step-*.pt"), key=lambda p: int(p.stem.split("-")[1]))
    return done[-1] if done else None


def _save(ckdir: Path, step: int, model: torch.nn.Module, opt: torch.optim.Optimizer) -> Path:
    path = ckdir / f"step-{step:08d}.pt"
    tmp = ckdir / f".step-{step:08d}.pt.tmp"
    torch.save({"step": step, "model": model.state_dict(), "optim": opt.state_dict()}, tmp)
    os.replace(tmp, path)
    return path


def _time_allreduce(nbytes: int, iters: int, channels: int) -> list[float]:
    """All-reduces of `nbytes`, each cut into one piece per channel, all in flight at once (gloo puts
    consecutive collectives on consecutive devices, so each piece goes over its own rail)."""
    buf = torch.ones(max(1, nbytes // 4), dtype=torch.float32)
    pieces = list(buf.chunk(max(1, channels)))

    def once() -> None:
        for work in [dist.all_reduce(p, async_op=True) for p in pieces]:
            work.wait()

    once()  # warm-up: connections are made lazily
    times = []
    for _ in range(iters):
        dist.barrier()
        t0 = time.perf_counter()
        once()
        times.append(time.perf_counter() - t0)
    return times


def _rails_up(rails: int) -> list[int]:
    """This server's rails whose interface is up with carrier (an Active HCA port), asked of the
    kernel of the namespace the rank runs in."""
    up = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for r in range(rails):
            try:
                got = fcntl.ioctl(s, SIOCGIFFLAGS, struct.pack(IFREQ, f"rail{r}".encode(), 0))
            except OSError:  # no such interface
                continue
            flags = struct.unpack(IFREQ, got)[1]
            if flags & IFF_UP and flags & IFF_RUNNING:
                up.append(r)
    return up


def _store(timeout: timedelta) -> dist.Store:
    """The group's TCP store, made as `init_process_group`'s env:// would make it (rank 0 serves it
    unless torchrun's agent does), so the ranks can use it before the group exists."""
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    agent = os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True"
    return dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), world,
                         is_master=rank == 0 and not agent, timeout=timeout, multi_tenant=True)


def _agree_rails(store: dist.Store, rails: int) -> tuple[list[int], list[int]]:
    """(the rails up on every rank's server, the job's channels): every rank posts its server's rails
    up and its server's rank count, then reads everyone's (NCCL's bootstrap all-gather)."""
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    mine = f"{','.join(map(str, _rails_up(rails)))};{os.environ.get('LOCAL_WORLD_SIZE', '1')}"
    store.set(f"twin/rails/{rank}", mine)  # (a store per round: TORCH_DISABLE_SHARE_RDZV_TCP_STORE)
    keys = [f"twin/rails/{i}" for i in range(world)]
    store.wait(keys)
    posted = [store.get(k).decode().split(";") for k in keys]
    up = rail_plan.common([int(r) for r in ups.split(",") if r] for ups, _ in posted)
    per_server = min(int(n) for _, n in posted)  # every rank must reach the same answer
    return up, rail_plan.channels(up, per_server, rails)


def main() -> int:
    faulthandler.enable()  # a rank killed by a signal (SIGABRT from std::terminate) says where it was
    a = _args()
    health = GpuHealth(int(os.environ["LOCAL_RANK"]))
    try:
        health.check()   # a lost GPU does not join the group
        return train(a, health)
    except GpuLost as e:
        return gpu_lost(a.events, health, e)


def train(a: argparse.Namespace, health: GpuHealth) -> int:
    timeout = timedelta(seconds=a.timeout)
    up: list[int] = []
    channels: list[int] = []
    if a.rails:
        store = _store(timeout)
        up, channels = _agree_rails(store, a.rails)
        os.environ["GLOO_SOCKET_IFNAME"] = ",".join(f"rail{r}" for r in channels)  # before gloo starts
        dist.init_process_group("gloo", store=store, rank=int(os.environ["RANK"]),
                                world_size=int(os.environ["WORLD_SIZE"]), timeout=timeout)
    else:
        dist.init_process_group("gloo", timeout=timeout)
    rank, world = dist.get_rank(), dist.get_world_size()
    restart = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    ev = Events(a.events, rank)
    ckdir = Path(a.checkpoint_dir)
    ckdir.mkdir(parents=True, exist_ok=True)
    # (hidden files, twin stage's journal among them, are bookkeeping, not inputs)
    files = sorted(p for p in Path(a.dataset).rglob("*") if p.is_file() and not p.name.startswith(".")) \
        if a.dataset else []
    model = DistributedDataParallel(_model(a.hidden))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    start = 0
    last = _latest(ckdir)
    if last is not None:
        state = torch.load(last, weights_only=True)
        model.module.load_state_dict(state["model"])
        opt.load_state_dict(state["optim"])
        start = state["step"]
    ev("started", world=world, restart=restart, resumed_from=start if last else None,
       master=os.environ.get("MASTER_ADDR"), rails_up=up, channels=channels,
       params=sum(p.numel() for p in model.parameters()), dataset_files=len(files), nvml=health.state)
    times = _time_allreduce(a.allreduce_bytes, a.allreduce_iters, len(channels))
    ev("allreduce", bytes=a.allreduce_bytes, world=world, channels=channels, rails_up=len(up) if a.rails else None,
       times_s=times, median_s=statistics.median(times))
    t0, loss = time.perf_counter(), None
    for step in range(start + 1, a.steps + 1):
        x, y = _batch(step, rank, a.batch, files)
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()  # DDP all-reduces the gradients over gloo here
        opt.step()
        if a.step_sleep:
            time.sleep(a.step_sleep)
        if a.health_every and step % a.health_every == 0:
            health.check()
        if step == start + 1 or step % 10 == 0:
            ev("step", step=step, loss=loss.item())
        if a.checkpoint_every and step % a.checkpoint_every == 0 and step < a.steps:
            if rank == 0:
                ev("checkpoint", step=step, path=str(_save(ckdir, step, model.module, opt)))
            dist.barrier()  # nobody runs ahead of a checkpoint a restart would need
    took = time.perf_counter() - t0
    done = a.steps - start
    ev("finished", step=a.steps, steps=done, seconds=took, steps_per_s=done / took if took > 0 else None,
       loss=loss.item() if loss is not None else None, world=world)
    # Every rank done with its last collective before any tears its connections down: without this a
    # rank's exit aborted (std::terminate in gloo's teardown) in about 1 job in 5, and torchrun ran the
    # finished job again from its last checkpoint.
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    code = main()
    # Leave without the interpreter's and C++'s teardown: the job's work is done and written. A rank
    # that had finished (barrier passed, group destroyed) still aborted in about 1 exit in 60 on this
    # machine (torch 2.13, gloo): std::terminate with no Python frame left (faulthandler), so in the
    # destructors that run at exit; torchrun took the -6 for a failure and ran the finished job again.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
