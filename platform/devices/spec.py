"""What a device site runs: one validated spec, written by whoever starts the site and
read by Atoll's ServerApp (the SuperLink starts it; the spec's path is in its run config)."""

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from atoll.platform.site.spec import SiteGeo

RUN_CONFIG_KEY = "atoll-site"  # the run-config entry that holds the spec's path


class DeviceSiteSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = Field(
        description="'module:callable' in the device app that builds the model "
        "(the site's initial parameters), e.g. 'fmnist_flower.task:Net'"
    )
    seed: int = Field(0, description="torch's seed before the model is built")
    rounds: int = Field(3, ge=1)
    shards: int = Field(1, ge=1, description="parameter-server shards (one geo mirror each)")
    min_replies: int = Field(1, ge=1, description="a round completes with this many replies")
    round_timeout_s: float = Field(600.0, gt=0, description="a round's deadline")
    wait_for_devices_s: float = Field(300.0, gt=0)
    poll_s: float = Field(0.2, gt=0, description="between pulls of replies")
    evaluate: bool = Field(True, description="ask the devices for their accuracy each round")
    train_config: dict[str, int | float | str | bool] = Field(
        default_factory=dict, description="sent to the devices with each training round"
    )
    out_dir: Path = Field(description="where the site writes log.jsonl and model.npz")
    geo: SiteGeo | None = None

    @classmethod
    def load(cls, path: Path) -> "DeviceSiteSpec":
        return cls.model_validate_json(path.read_text())
