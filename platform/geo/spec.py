"""Which geo policy a job runs, with its parameters: one validated spec.

Plain data, without torch: job files, the control plane and the command line read it.
`atoll.platform.geo.policies.build_policy` makes the policy it names.
"""

from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

PolicyName = Literal["asp", "bsp", "lan", "fedavg", "diloco", "none"]
POLICIES: tuple[str, ...] = get_args(PolicyName)
# How asp's threshold decays, and the precision of the values it sends.
ScheduleKind = Literal["constant", "inverse-sqrt", "lr"]
ValueType = Literal["float32", "float16", "int8"]
# How asp shares each site's steps: through the owner of each piece (sharded), to every
# site at once (direct), tracked estimates, or Gaia's release-and-zero.
Exchange = Literal["sharded", "direct", "tracking", "release"]


class GeoSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    policy: PolicyName = "asp"
    # asp
    exchange: Exchange = Field(
        "direct",
        description="asp: each site sends the top of its residual steps to the owner of each "
        "piece, which broadcasts the top of their sum (sharded); to every site, each replica "
        "applying exactly what is sent (direct); every site tracks every "
        "site's step and applies all every clock (tracking); or sends significant "
        "accumulated updates and zeroes them (release, Gaia)",
    )
    density: float = Field(
        0.008,
        gt=0,
        le=1,
        description="asp: most elements a site sends per clock (a share; 1 = no cap); the "
        "share follows the links' measured backlog up to this, from density_floor",
    )
    decay: float = Field(
        0.9,
        ge=0,
        le=1,
        description="tracking asp: how much of a site's estimated step carries over to the "
        "next clock until refreshed (1 keeps it; 0 sends positions only)",
    )
    density_floor: float = Field(
        0.004, gt=0, le=1, description="asp: the share sent at the start and at least"
    )
    threshold: float = Field(0.01, ge=0, description="significance threshold v0 (0.01 = 1%)")
    threshold_schedule: ScheduleKind = "constant"
    budget_mbps: float | None = Field(
        None, gt=0, description="adaptive threshold: keep each site's WAN egress near this"
    )
    staleness: int = Field(3, ge=0, description="mirror clock bound DS")
    sync_at_skew: float | None = Field(
        0.6,
        ge=0,
        le=1,
        description="asp: the sites measure their label skew at the start (the mean "
        "total-variation distance of each site's label distribution from the pooled one: 0 "
        "for the same mix everywhere, 0.8 for two classes of ten per site) and run "
        "synchronously (DS=0) at or above this; delayed steps plateaued or diverged on "
        "sites that skewed (docs/geo-skew.md). None: DS as set",
    )
    sync_density: float = Field(
        0.04,
        gt=0,
        le=1,
        description="asp: the most elements a site sends per clock once the sites' skew made "
        "them synchronous (the share still follows the links' backlog): a synchronous clock "
        "waits out the slowest link's latency, and what the links carry within it costs no "
        "time",
    )
    lease_s: float = Field(
        10.0, gt=0, description="a mirror silent this long stops holding others back"
    )
    value_type: ValueType = Field("float16", description="asp: how update values travel")
    compensate_momentum: bool = Field(
        True,
        description="asp with SGD and no lookahead: lower the momentum by what DS clocks of "
        "staleness add (1 - (1 - momentum) * (1 + DS))",
    )
    lookahead: float = Field(
        0.5,
        ge=0,
        le=2,
        description="asp: take each gradient this share of the way towards where the "
        "mirrors' undelivered steps will move the replica, predicted from the site's own "
        "last step (0 = at the replica, as Gaia does)",
    )
    final: Literal["average", "flush"] = Field(
        "average",
        description="asp: how a run ends. average: one round makes every replica the "
        "replicas' mean (direct: what the messages made them, the residuals dropped; "
        "release: instead of the flush; sharded: after it); flush: send what is held back "
        "(release: the accumulators, as Gaia; sharded: residuals to the owners, then the "
        "owners' aggregates to all; direct: one round adds every residual)",
    )
    congestion_s: float = Field(
        0.05, ge=0, description="link backlog (seconds) beyond which updates are announced first"
    )
    # fedavg, diloco
    period: int = Field(10, ge=1, description="local clocks per round")
    outer_lr: float = Field(0.7, gt=0)
    outer_momentum: float = Field(0.9, ge=0, lt=1)

    @property
    def uses_lan_links(self) -> bool:
        """`lan` is BSP with every site in one datacenter: the ideal to compare with."""
        return self.policy == "lan"

    @property
    def label(self) -> str:
        if self.policy == "asp" and self.exchange != "release":
            label = f"asp {self.exchange} {self.density:.1%}"
            floor = type(self).model_fields["density_floor"].default
            if self.density_floor != floor and self.density_floor < self.density:
                label += f" from {self.density_floor:.1%}"
            if self.value_type != "float16":
                label += f" {self.value_type}"
            if self.lookahead:
                label += f" lookahead {self.lookahead:g}"
            if self.final != type(self).model_fields["final"].default:
                label += f" final {self.final}"
            if self.sync_at_skew is None:
                label += " never synchronous"
            elif self.sync_at_skew != type(self).model_fields["sync_at_skew"].default:
                label += f" sync at skew {self.sync_at_skew}"
            if self.sync_density != type(self).model_fields["sync_density"].default:
                label += f" {self.sync_density:.1%} synchronous"
            return f"{label} DS={self.staleness}"
        if self.policy == "asp":
            label = "asp adaptive" if self.budget_mbps else f"asp v={self.threshold:.0%}"
            if self.density < 1:
                label += f" cap {self.density:.1%}"
            if self.value_type != "float16":
                label += f" {self.value_type}"
            if self.lookahead:
                label += f" lookahead {self.lookahead:g}"
            default_staleness = type(self).model_fields["staleness"].default
            return label if self.staleness == default_staleness else f"{label} DS={self.staleness}"
        if self.policy in ("fedavg", "diloco"):
            return f"{self.policy} H={self.period}"
        return self.policy
