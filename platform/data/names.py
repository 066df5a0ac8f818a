"""The datasets Atoll loads, by name: plain data, so that job specs and the command line can
name them without loading torch. `datasets.DATASETS` has a loader for each."""

from typing import Literal, get_args

DatasetName = Literal["fashion-mnist", "digits"]
DATASET_NAMES: tuple[str, ...] = get_args(DatasetName)
