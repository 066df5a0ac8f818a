import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from atoll.platform.data.names import DatasetName

app = typer.Typer(help="Datasets and how they split across sites.", no_args_is_help=True)
# The options both commands take.
Dataset = Annotated[DatasetName, typer.Option(help="Training data.")]
Partition = Annotated[str, typer.Option(help="iid, label-skew:C or dirichlet:ALPHA.")]
Seed = Annotated[int, typer.Option()]
DataDir = Annotated[
    Path | None, typer.Option(help="Folder holding the datasets (else $ATOLL_DATA_DIR).")
]


@app.command("partition")
def partition(
    sites: Annotated[int, typer.Option(min=1, help="Number of sites.")],
    dataset: Dataset = "fashion-mnist",
    partition: Partition = "iid",
    seed: Seed = 0,
    data_dir: DataDir = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """Show how a partition splits the training set: samples and class histogram per site."""
    from atoll.platform.data.datasets import load_dataset
    from atoll.platform.data.partition import PartitionSpec, partition_dataset

    spec = PartitionSpec.parse(partition)
    data = load_dataset(dataset, data_dir)
    split = partition_dataset(data.train.y.numpy(), sites, spec, seed)
    if as_json:
        print(
            json.dumps(
                {
                    "dataset": data.name,
                    "partition": str(spec),
                    "seed": seed,
                    "sites": split.summary(),
                }
            )
        )
        return
    table = Table(title=f"{data.name}, {spec}, {sites} sites, seed {seed}")
    table.add_column("site", justify="right")
    table.add_column("samples", justify="right")
    for name in data.train.classes:
        table.add_column(name[:7], justify="right")
    for row in split.summary():
        table.add_row(str(row["site"]), str(row["samples"]), *map(str, row["class_counts"]))
    Console().print(table)


@app.command("split")
def split(
    out: Annotated[Path, typer.Option(help="Folder to write one sub-folder per site into.")],
    topology: Annotated[str, typer.Option(help="Whose sites (names) to split for.")] = (
        "three-continents"
    ),
    sites: Annotated[
        int | None, typer.Option(min=1, help="Only the topology's first N sites.")
    ] = None,
    dataset: Dataset = "fashion-mnist",
    partition: Partition = "iid",
    seed: Seed = 0,
    data_dir: DataDir = None,
) -> None:
    """Write each site's share of a public dataset to a folder of its own, and the `data:`
    its site.yaml needs (OUT/<site>/data.yaml). The shares are those an emulated job with the
    same partition and seed gives its sites."""
    from atoll.platform.data.partition import PartitionSpec
    from atoll.platform.data.split import split_to_folders
    from atoll.platform.net.topology import load_topology

    spec = PartitionSpec.parse(partition)
    chosen = load_topology(topology)
    if sites is not None:
        chosen = chosen.subset(sites)
    written = split_to_folders(dataset, data_dir, chosen.sites, str(spec), seed, out)
    table = Table(title=f"{dataset}, {spec}, seed {seed}: one folder per site")
    for column in ("site", "format", "path"):
        table.add_column(column)
    for name, data in written.items():
        table.add_row(name, data.format, str(data.path))
    Console().print(table)
