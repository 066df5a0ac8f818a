"""How label-skewed a federation is, and the staleness bound its sites can afford.

Measured on Fashion-MNIST over five sites 40-120 ms apart (docs/geo-skew.md): with two
classes of ten per site, every asynchronous setting tried plateaued near 0.5-0.7 or
diverged (even one clock of delay over LAN links, every element sent, ended 7-16
points under lan), where synchronous clocks (DS=0) ended 1.9 points under it.
Heavy-ball momentum tolerates a step's delay poorly (one clock of delay cuts the
curvature it stays stable at 38-fold at momentum 0.9), and on sites that disagree as
much as two-class sites do, no prediction of the steps in flight made up for it. On
Dirichlet(0.5) sites asynchrony kept close to lan's pace. So the sites measure their
skew once, at the start, from each other's label counts, and run synchronously at or
above a limit.

The skew is the mean, over sites, of the total-variation distance between a site's label
distribution and the pooled one: 0 when every site holds the same mix, 1 - k/C when each
holds k of C classes evenly (0.8 for two of ten), about 0.4 for Dirichlet(0.5) over ten
classes.
"""

from collections.abc import Sequence

import torch


def label_skew(counts: Sequence[torch.Tensor]) -> float:
    """The sites' label skew from their class counts (one vector per site, same length)."""
    if not counts:
        raise ValueError("label skew needs at least one site's class counts")
    if len({len(c) for c in counts}) > 1:
        raise ValueError(f"sites count different classes: {sorted({len(c) for c in counts})}")
    table = torch.stack([c.double() for c in counts])
    if (table < 0).any():
        raise ValueError("class counts cannot be negative")
    totals = table.sum(dim=1)
    held = table[totals > 0]
    if not len(held):
        return 0.0
    pooled = held.sum(dim=0) / held.sum()
    shares = held / held.sum(dim=1, keepdim=True)
    return float((shares - pooled).abs().sum(dim=1).mean() / 2)


def staleness_for(skew: float, staleness: int, sync_at_skew: float | None) -> int:
    """The DS a federation with this skew runs at: 0 at or above the limit, else its own."""
    if sync_at_skew is not None and skew >= sync_at_skew:
        return 0
    return staleness
