"""What BSP would send over the WAN for a model, counted the way the simulator counts.

Every clock each site sends its change to the owner of each piece of the vector and
gets the new piece back: 2 (N - 1) pieces-worth per site, about 2 (N - 1) x 4 bytes x
params in all. Rather than that formula, the `bsp` policy itself is run for one clock
on a zero model, with every message encoded by the real codec and framed as the real
link frames it (the same accounting as the simulator's links).
"""

from collections import deque

import torch

from atoll.platform.core.slices import even_slice
from atoll.platform.geo.codec import encoded_size
from atoll.platform.geo.messages import BROADCAST
from atoll.platform.geo.policy import SiteSlice
from atoll.platform.geo.rounds import RoundSync
from atoll.platform.net.frames import DATA_HEADER_BYTES, wire_bytes


def bsp_bytes_per_clock(params: int, sites: tuple[str, ...], shards: int = 1) -> int:
    """Bytes every link together carries in one BSP clock, for `params` parameters."""
    if len(sites) < 2:
        return 0
    total = 0
    for shard in range(shards):
        start, end = even_slice(params, shards, shard)  # as SiteLayout slices the vector
        size = end - start
        slices = [SiteSlice(i, len(sites), torch.zeros(size), start) for i in range(len(sites))]
        policies = [RoundSync(where) for where in slices]
        step = torch.full((size,), 1e-3)
        queue = deque(
            (i, out) for i, policy in enumerate(policies) for out in policy.after_clock(step, 0.0)
        )
        while queue:
            sender, out = queue.popleft()
            targets = policies[sender].mirrors if out.to == BROADCAST else [out.to]
            for target in targets:
                # The site whose name sorts first dials, and a dialer masks its frames.
                masked = sites[sender] < sites[target]
                total += wire_bytes(DATA_HEADER_BYTES + encoded_size(out.message), masked)
                queue.extend((target, o) for o in policies[target].receive(out.message, 0.0))
    return total
