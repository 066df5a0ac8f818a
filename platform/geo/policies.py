"""The geo policy a `GeoSpec` names, built for one site of a job."""

from typing import Any

import torch

from atoll.platform.geo.asp import ApproximateSync
from atoll.platform.geo.direct import DirectSync
from atoll.platform.geo.link_budget import LinkBudget
from atoll.platform.geo.policy import GeoPolicy, Isolated, SiteSlice
from atoll.platform.geo.rounds import OuterNesterov, RoundSync
from atoll.platform.geo.sharded import ShardedSync
from atoll.platform.geo.significance import AdaptiveThreshold, ThresholdSchedule
from atoll.platform.geo.spec import GeoSpec
from atoll.platform.geo.tracking import TrackingSync


def build_policy(
    spec: GeoSpec,
    site: int,
    sites: int,
    params: torch.Tensor,
    offset: int = 0,
    start_s: float = 0.0,
    class_counts: torch.Tensor | None = None,
) -> GeoPolicy:
    """Site `site` of `sites`, owning `params` (the slice that starts at `offset`), its
    data's `class_counts` (None: unknown; asp measures the sites' skew with them)."""
    where = SiteSlice(site, sites, params, offset)
    if spec.policy == "asp":
        return _asp(spec, where, start_s, class_counts)
    if spec.policy in ("bsp", "lan"):
        return RoundSync(where, name=spec.policy, period=1)
    if spec.policy == "fedavg":
        return RoundSync(where, name="fedavg", period=spec.period)
    if spec.policy == "diloco":
        outer = OuterNesterov(spec.outer_lr, spec.outer_momentum)
        return RoundSync(where, name="diloco", period=spec.period, outer=outer)
    return Isolated(where)


def _asp(
    spec: GeoSpec, where: SiteSlice, start_s: float, class_counts: torch.Tensor | None
) -> GeoPolicy:
    # A density of 1 is no cap: every element, from the first clock.
    floor = 1.0 if spec.density >= 1 else min(spec.density_floor, spec.density)
    budget = LinkBudget(spec.density, floor, target_s=spec.congestion_s)
    # Every exchange: how far a site runs ahead, what its values travel as, how it ends.
    asp: dict[str, Any] = {
        "staleness": spec.staleness,
        "lease_s": spec.lease_s,
        "start_s": start_s,
        "value_type": spec.value_type,
        "final": spec.final,
        "lookahead": spec.lookahead,
        "class_counts": class_counts,
        "sync_at_skew": spec.sync_at_skew,
        "sync_density": spec.sync_density,
    }
    if spec.exchange == "sharded":
        return ShardedSync(where, budget=budget, **asp)
    if spec.exchange == "direct":
        return DirectSync(where, budget=budget, **asp)
    if spec.exchange == "tracking":
        return TrackingSync(where, budget=budget, decay=spec.decay, **asp)
    adaptive = AdaptiveThreshold(spec.budget_mbps * 1e6) if spec.budget_mbps else None
    capped = spec.density < 1  # at most that share per clock, following the links
    return ApproximateSync(
        where,
        schedule=ThresholdSchedule(spec.threshold, spec.threshold_schedule),
        adaptive=adaptive,
        congestion_s=spec.congestion_s,
        budget=budget if capped else None,
        **asp,
    )
