"""Where a site's ranks compute, and how they talk: `--device auto|cpu|cuda`.

Each rank owns one device: `cuda:LOCAL_RANK` (its index among the ranks on its machine)
when the site runs on CUDA, else the CPU. Its flat parameters and gradients, its shards'
optimizer state and the buffers it exchanges live there. The site's process group is NCCL
when every rank is on CUDA, gloo otherwise.

A CPU shard with GPU workers is not a placement Atoll makes: NCCL takes only CUDA ranks,
and gloo would stage every CUDA tensor through host memory at each exchange, costing more
than the shard's optimizer step saves on the GPU. A site is all-CUDA (NCCL: dedicated
shards each take a GPU of their own too) or all-CPU (gloo).
"""

from dataclasses import dataclass
from typing import Literal

from atoll.platform.core.errors import AtollError

# No torch here: job specs name a device choice and load without it. (rank.py and
# cluster.py, which place ranks, ask torch what this machine has.)

DeviceChoice = Literal["auto", "cpu", "cuda"]
DeviceKind = Literal["cpu", "cuda"]


@dataclass(frozen=True)
class Placement:
    kind: DeviceKind
    backend: Literal["gloo", "nccl"]

    def device(self, local_rank: int) -> str:
        return f"cuda:{local_rank}" if self.kind == "cuda" else "cpu"


def place_site(choice: DeviceChoice, cuda_devices: int, ranks_per_machine: int) -> Placement:
    """The site's placement, from the choice and what this machine has: `cuda_devices`
    (0 without CUDA) and how many of the site's ranks run on it.

    Raises the error a user sees, before any rank starts."""
    if choice == "cpu" or (choice == "auto" and cuda_devices == 0):
        return Placement("cpu", "gloo")
    if cuda_devices == 0:
        raise AtollError(
            "--device cuda, but this machine has no CUDA device (torch.cuda.is_available() "
            "is False: no GPU, no driver, or a CPU-only PyTorch build); use --device cpu or auto"
        )
    if ranks_per_machine > cuda_devices:
        raise AtollError(
            f"{ranks_per_machine} ranks of the site on this machine but {cuda_devices} CUDA "
            "device(s): each rank owns one GPU (cuda:LOCAL_RANK); run fewer workers or shards "
            "here, or --device cpu"
        )
    return Placement("cuda", "nccl")
