"""Which optimizer trains a model, and its learning-rate schedule.

Both tiers use it: a site's shards step with it (platform/site/optim.py builds it) and a
geo job names it (platform/geo/job.py). No torch here: job specs load without it.
"""

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

OptimizerName = Literal["sgd", "adam"]
DEFAULT_LR: dict[OptimizerName, float] = {"sgd": 0.05, "adam": 0.001}


class OptimizerSpec(BaseModel):
    """The optimizer a shard applies to its slice (`atoll.platform.site.optim` builds it),
    and the learning-rate schedule."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: OptimizerName = "sgd"
    lr: float = Field(DEFAULT_LR["sgd"], gt=0, description="default 0.05 for sgd, 0.001 for adam")
    momentum: float = Field(0.9, ge=0, lt=1, description="sgd only")
    weight_decay: float = Field(0.0, ge=0)
    schedule: Literal["constant", "cosine"] = "constant"

    @model_validator(mode="before")
    @classmethod
    def _default_lr_for_the_optimizer(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("lr") is None and data.get("name") in DEFAULT_LR:
            return {**data, "lr": DEFAULT_LR[data["name"]]}
        return data

    def lr_at(self, step: int, total_steps: int) -> float:
        """Learning rate at `step` (0-based): a function of the step, so resume needs no state."""
        if self.schedule == "cosine" and total_steps > 0:
            return 0.5 * self.lr * (1 + math.cos(math.pi * min(step, total_steps) / total_steps))
        return self.lr
