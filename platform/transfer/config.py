"""What a cartel site is told to do: one frozen record, checked when it is made."""

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

MergePolicy = Literal["replace", "average", "sample-weighted"]
DetectorName = Literal["window", "adwin", "page-hinkley"]
NeighbourChoice = Literal["jsd", "random"]
WireDtype = Literal["float32", "float16"]
MERGE_POLICIES: tuple[MergePolicy, ...] = ("replace", "average", "sample-weighted")

# An accuracy or a share of the samples.
Fraction = Annotated[float, Field(ge=0, le=1)]
# How far something must move to count; at 0, every change would.
Threshold = Annotated[float, Field(gt=0, le=1)]


class CartelConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    report_every: int = Field(
        30,
        ge=0,
        description="Report every m batches (0: never on time). A heartbeat: what changes "
        "is reported when it changes (priors, drift), so m only has to keep a site live "
        "(live_window_s) and its accuracy fresh.",
    )
    prior_move_threshold: Threshold | None = Field(
        0.1,
        description="Also report when the priors moved this far (Jensen-Shannon, bits) "
        "from the last report; null: never on change.",
    )
    accuracy_move_threshold: Threshold | None = Field(
        0.1,
        description="Also report when the accuracy moved this far from the last report "
        "(a site still learning); null: never on change.",
    )
    priors_window: int = Field(10, ge=1, description="Batches the reported priors cover.")
    accuracy_window: int = Field(30, ge=1, description="Batches per-class accuracy covers.")
    detector: DetectorName = Field("window", description="Drift detector on the error stream.")
    drift_window: int = Field(2, ge=1, description="W: batches in the windowed error.")
    drift_limit: Threshold = Field(
        0.15,
        description="L: windowed error this far above the reference fires. Low, because a "
        "firing asks nobody unless a class stands out (drifted_classes).",
    )
    drift_reference: int = Field(
        10, ge=1, description="Batches before the window whose mean error is the reference."
    )
    warmup: int = Field(20, ge=0, description="Batches before drift may fire (early learning).")
    poor_class_accuracy: Fraction = Field(
        0.6, description="A class this inaccurate in the drift window has drifted."
    )
    min_class_share: Fraction = Field(
        0.05, description="A part holds the rows of classes this common now."
    )
    k: int = Field(3, ge=1, description="Neighbours tried, nearest first.")
    min_neighbour_accuracy: Fraction = Field(
        0.8,
        description="A neighbour's mean accuracy on the drifted classes, at least (or the "
        "asking site's own accuracy before the drift, if lower).",
    )
    live_window_s: float = Field(60.0, gt=0, description="A neighbour reported within this.")
    merge: MergePolicy = Field("sample-weighted", description="How a fetched part is merged.")
    neighbour_choice: NeighbourChoice = Field(
        "jsd", description="jsd (Cartel) or random (the random-neighbour baseline)."
    )
    cooldown: int = Field(
        5, ge=0, description="Batches after a transfer or a failed search before drift counts."
    )
    seed: int = Field(0, description="For the random neighbour choice.")
    part_wire_dtype: WireDtype = Field(
        "float16", description="Precision of a part's arrays on the wire (half the bytes)."
    )
