"""Two-node NCCL all-reduce probe, run by the validation Job (components/gpu/validation.py) under torchrun.

Every GPU of both nodes joins one all-reduce of MESSAGE_BYTES; the slowest rank's time gives the bus bandwidth
(NCCL's definition for all-reduce: algorithm bandwidth x 2(n-1)/n, NVIDIA/nccl-tests doc/PERFORMANCE.md), which
must reach MIN_BUS_BANDWIDTH_GBPS. Rank 0 writes the verdict to the termination log, where `pulumi up` shows it
when the Job fails. torch is imported at run time: this file ships in a ConfigMap and runs in an NGC PyTorch image.
"""

from __future__ import annotations

import importlib
import os
import sys
import time
from typing import Any

WARMUP_ITERATIONS = 5
TIMED_ITERATIONS = 20


def bus_bandwidth_gbps(message_bytes: int, seconds: float, world_size: int) -> float:
    """NCCL's all-reduce bus bandwidth in GB/s (10^9 bytes) for one all-reduce of message_bytes."""
    if seconds <= 0 or world_size < 2:
        raise ValueError("an all-reduce across at least two ranks takes some time")
    algorithm_bandwidth = message_bytes / seconds / 1e9
    return algorithm_bandwidth * 2 * (world_size - 1) / world_size


def verdict(bus_gbps: float, floor_gbps: float, pool: str, vm_size: str) -> tuple[bool, str]:
    """Whether the fabric passes, and the one line `pulumi up` shows."""
    passed = bus_gbps >= floor_gbps
    relation = ">=" if passed else "<"
    word = "PASS" if passed else "FAIL"
    return passed, (
        f"{word} NCCL all-reduce on pool {pool} ({vm_size}): bus bandwidth {bus_gbps:.1f} GB/s "
        f"{relation} {floor_gbps:.1f} GB/s"
    )


def main() -> int:
    torch: Any = importlib.import_module("torch")
    dist: Any = importlib.import_module("torch.distributed")
    rank, local_rank = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
    world_size = int(os.environ["WORLD_SIZE"])
    message_bytes = int(os.environ["MESSAGE_BYTES"])
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl")
    tensor = torch.ones(message_bytes // 4, dtype=torch.float32, device="cuda")
    for _ in range(WARMUP_ITERATIONS):
        dist.all_reduce(tensor)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(TIMED_ITERATIONS):
        dist.all_reduce(tensor)
    torch.cuda.synchronize()
    elapsed = torch.tensor([(time.perf_counter() - start) / TIMED_ITERATIONS], device="cuda")
    dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)  # the slowest rank sets the pace
    bus_gbps = bus_bandwidth_gbps(message_bytes, float(elapsed.item()), world_size)
    passed, line = verdict(
        bus_gbps, float(os.environ["MIN_BUS_BANDWIDTH_GBPS"]), os.environ["POOL"], os.environ["VM_SIZE"]
    )
    if rank == 0:
        print(line, flush=True)
        with open("/dev/termination-log", "w", encoding="utf-8") as log:
            log.write(line)
    dist.destroy_process_group()
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
