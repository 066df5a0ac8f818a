"""What a site's data is and where it lives: plain data (no numpy, no torch), so that site
files, job specs, bus messages and the control plane name it without loading a runtime.

- `DataSchema`: the shape of one input and the classes, and how integer pixels become
  the model's inputs. A job names one; every site's data must have it.
- `SiteData`: a site's own dataset (site.yaml's `data:`): a format, a path, a schema.
- `DataShare`: the seeded partition spec from which a site of the emulated federation
  (one public dataset split across local sites) derives its own share, where it runs.
- `DataReport`: what a site tells the others about its data: schema, sample count and
  label histogram; never a sample.
"""

from pathlib import Path
from typing import Annotated, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from atoll.platform.data.names import DatasetName

# idx: the MNIST family's files, as Debian's dataset-fashion-mnist ships them; npz: numpy's
# archive (x, y), what most Python pipelines can write in one line; folder: one sub-folder
# of image files per class, how image datasets are usually kept by hand. CSV and parquet
# are left out: tabular sites would need a feature schema of their own, not an image shape.
DataFormat = Literal["idx", "npz", "folder"]


# `schema` is a name BaseModel already has: the field is `data_schema`, read and written as
# `schema`.
_ALIASED = ConfigDict(
    extra="forbid",
    frozen=True,
    validate_by_name=True,
    validate_by_alias=True,
    serialize_by_alias=True,
)


class DataSchema(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    input_shape: tuple[Annotated[int, Field(ge=1)], ...] = Field(
        min_length=1, description="one input, e.g. [1, 28, 28] (channels, height, width)"
    )
    classes: tuple[str, ...] = Field(min_length=2, description="label i is classes[i]")
    # Integer pixels are scaled to [0, 1], then standardised: (x - mean) / std. Float data
    # is taken as the model's input as it is.
    mean: float = 0.0
    std: float = Field(1.0, gt=0)

    @property
    def num_classes(self) -> int:
        return len(self.classes)

    def describe(self) -> str:
        shape = "x".join(map(str, self.input_shape))
        return f"{shape} inputs, {self.num_classes} classes"


# The schemas of the public datasets the emulated federation splits.
SCHEMAS: dict[str, DataSchema] = {
    "fashion-mnist": DataSchema(
        input_shape=(1, 28, 28),
        classes=(
            "T-shirt/top",
            "Trouser",
            "Pullover",
            "Dress",
            "Coat",
            "Sandal",
            "Shirt",
            "Sneaker",
            "Bag",
            "Ankle boot",
        ),
        # Per-pixel statistics of the Fashion-MNIST training set, after scaling to [0, 1].
        mean=0.2860,
        std=0.3530,
    ),
    "digits": DataSchema(input_shape=(1, 8, 8), classes=tuple(str(d) for d in range(10))),
}


class SiteData(BaseModel):
    """A site's own dataset, as its site.yaml names it.

    `path` holds the training data, `test_path` the test data in the same format:
    idx: a folder with train-images-idx3-ubyte[.gz] and train-labels-idx1-ubyte[.gz]
         (test: t10k-* in `test_path`, else in the same folder);
    npz: a file with arrays x and y (test: `test_path`'s x and y, else x_test and y_test);
    folder: one sub-folder per class, named as the schema's classes, of PNG/JPEG images.
    """

    model_config = _ALIASED

    format: DataFormat
    path: Path
    test_path: Path | None = None
    data_schema: DataSchema | DatasetName = Field(
        alias="schema", description="the schema, or the name of a public dataset's"
    )

    @property
    def resolved_schema(self) -> DataSchema:
        named = self.data_schema
        return SCHEMAS[named] if isinstance(named, str) else named


class DataShare(BaseModel):
    """Site `index` of `sites` takes its part of a public training set split by `partition`
    (platform/data/partition.py) with `seed`: every site computes the same split from the
    same labels, and keeps its own part."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    partition: str = Field(description="iid, label-skew:C or dirichlet:ALPHA")
    sites: int = Field(ge=1)
    index: int = Field(ge=0)
    seed: int = 0

    @model_validator(mode="after")
    def _index_in_range(self) -> Self:
        if self.index >= self.sites:
            raise ValueError(f"site index {self.index} out of range for {self.sites} sites")
        return self


class DataReport(BaseModel):
    """What a site reports about its data: the control plane matches jobs against it, the
    registry ranks neighbours by its label histogram."""

    model_config = _ALIASED

    data_schema: DataSchema = Field(alias="schema")
    samples: int = Field(ge=0, description="training samples")
    class_counts: tuple[int, ...] = Field(description="training samples per class")
    test_samples: int = Field(0, ge=0)
