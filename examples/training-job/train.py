"""Minimal DDP training loop under torchrun: NCCL, resumable checkpoints on Lustre.

torchrun sets RANK, LOCAL_RANK and WORLD_SIZE for each process; the JobSet gives every pod its
node rank and the coordinator's address. A preempted or drained job gets SIGTERM: every rank
stops at the same step, rank 0 writes a checkpoint, and the next run resumes from it.
"""

import os
import signal
import sys
from pathlib import Path

import torch
import torch.distributed as dist

stop_requested = False


def request_stop(signum: int, frame: object) -> None:
    global stop_requested
    stop_requested = True


signal.signal(signal.SIGTERM, request_stop)

dist.init_process_group("nccl")  # env:// from torchrun
rank = int(os.environ["RANK"])
local_rank = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local_rank)
device = torch.device("cuda", local_rank)

model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(1024, 1024).to(device), device_ids=[local_rank])
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
checkpoint = Path(os.environ["CHECKPOINT_DIR"]) / "latest.pt"
every = int(os.environ["CHECKPOINT_EVERY"])
steps = int(os.environ["STEPS"])


def save(step: int) -> None:
    if rank == 0:
        checkpoint.parent.mkdir(parents=True, exist_ok=True)
        tmp = checkpoint.with_suffix(".tmp")
        torch.save({"model": model.module.state_dict(), "optimizer": optimizer.state_dict(), "step": step}, tmp)
        tmp.replace(checkpoint)  # atomic: a crash never leaves a torn checkpoint
    dist.barrier()


start = 0
if checkpoint.exists():
    state = torch.load(checkpoint, map_location=device)
    model.module.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    start = state["step"] + 1

for step in range(start, steps):
    loss = model(torch.randn(64, 1024, device=device)).square().mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    # Every rank learns of a SIGTERM on any rank, so all stop at this step together.
    stop = torch.tensor([1.0 if stop_requested else 0.0], device=device)
    dist.all_reduce(stop, op=dist.ReduceOp.MAX)
    if stop.item() > 0:
        save(step)
        dist.destroy_process_group()
        sys.exit(143)  # not a success: the Job must not count a stopped rank as completed
    if step % every == 0 or step == steps - 1:
        save(step)
dist.destroy_process_group()
