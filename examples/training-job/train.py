"""Minimal DDP training loop: one process per pod, NCCL, resumable checkpoints on Lustre."""

import os
from pathlib import Path

import torch
import torch.distributed as dist

rank = int(os.environ["JOB_COMPLETION_INDEX"])
world = int(os.environ["WORLD_SIZE"])
dist.init_process_group(
    "nccl", init_method=f"tcp://{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}", rank=rank, world_size=world
)
torch.cuda.set_device(0)
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(1024, 1024).cuda())
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
checkpoint = Path(os.environ["CHECKPOINT_DIR"]) / "latest.pt"
start = 0
if checkpoint.exists():
    state = torch.load(checkpoint, map_location="cuda:0")
    model.module.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    start = state["step"] + 1
for step in range(start, int(os.environ.get("STEPS", "1000"))):
    loss = model(torch.randn(64, 1024, device="cuda")).square().mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if rank == 0 and step % 100 == 0:
        checkpoint.parent.mkdir(parents=True, exist_ok=True)
        tmp = checkpoint.with_suffix(".tmp")
        torch.save({"model": model.module.state_dict(), "optimizer": optimizer.state_dict(), "step": step}, tmp)
        tmp.replace(checkpoint)  # atomic: a crash never leaves a torn checkpoint
dist.destroy_process_group()
