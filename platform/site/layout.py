"""Which rank does what in a site: workers, parameter-server shards, and their slices."""

from dataclasses import dataclass

from atoll.platform.core.errors import AtollError
from atoll.platform.core.slices import even_slice


@dataclass(frozen=True)
class SiteLayout:
    """K workers and S parameter-server shards.

    Workers are ranks 0..K-1. Co-located shards live on worker ranks (shard s on
    rank s mod K); dedicated shards get server ranks K..K+S-1 of their own. Shard
    s owns a contiguous slice of the flat parameter vector; slices differ in size
    by at most one element.
    """

    workers: int
    shards: int
    dedicated_shards: bool = False

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise AtollError(f"a site needs at least 1 worker, got {self.workers}")
        if self.shards < 1:
            raise AtollError(f"a site needs at least 1 shard, got {self.shards}")

    @property
    def world_size(self) -> int:
        return self.workers + (self.shards if self.dedicated_shards else 0)

    def owner(self, shard: int) -> int:
        return self.workers + shard if self.dedicated_shards else shard % self.workers

    def shards_of(self, rank: int) -> list[int]:
        return [s for s in range(self.shards) if self.owner(s) == rank]

    def is_worker(self, rank: int) -> bool:
        return rank < self.workers

    def bounds(self, shard: int, num_params: int) -> tuple[int, int]:
        if self.shards > num_params:
            raise AtollError(f"{self.shards} shards for only {num_params} parameters")
        return even_slice(num_params, self.shards, shard)

    def describe(self, rank: int) -> str:
        roles = []
        if self.is_worker(rank):
            roles.append(f"worker {rank}")
        roles += [f"shard {s}" for s in self.shards_of(rank)]
        return f"rank {rank} ({', '.join(roles)})"
