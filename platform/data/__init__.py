"""Datasets that load offline, and partitioners that split them across sites."""

from atoll.platform.data.datasets import DATASETS, Dataset, TrainTest, check_dataset, load_dataset
from atoll.platform.data.partition import (
    Partition,
    PartitionSpec,
    SitePartition,
    partition_dataset,
)

__all__ = [
    "DATASETS",
    "Dataset",
    "Partition",
    "PartitionSpec",
    "SitePartition",
    "TrainTest",
    "check_dataset",
    "load_dataset",
    "partition_dataset",
]
