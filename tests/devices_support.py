"""What the device-tier tests share: the example app, its config, in-process devices,
SuperNodes on this host."""

import subprocess
import sys
import tomllib
from pathlib import Path

from atoll.platform.devices.flower import SuperNodeOptions
from atoll.platform.devices.launch import start_supernode, stop_process
from atoll.platform.devices.local_grid import LocalGrid
from atoll.platform.net.ports import free_loopback_port

EXAMPLE = Path(__file__).parents[1] / "examples" / "fashion-mnist-flower"
MODEL = "fmnist_flower.task:Net"
# MODEL names a module of the example app: importable by any test that uses it, whatever
# ran before it on this worker.
if str(EXAMPLE) not in sys.path:
    sys.path.insert(0, str(EXAMPLE))


def example_config(data_dir: Path, **overrides: int | float | str) -> dict[str, int | float | str]:
    """The example app's run config, with its data where the tests find it."""
    pyproject = tomllib.loads((EXAMPLE / "pyproject.toml").read_text())
    config = dict(pyproject["tool"]["flwr"]["app"]["config"])
    config.update({"data-dir": str(data_dir), **overrides})
    return config


def local_devices(
    data_dir: Path, partitions: list[int], num_partitions: int, **overrides: int | float | str
) -> LocalGrid:
    """Devices in this process running the example's ClientApp, as SuperNodes would."""
    from fmnist_flower.client_app import app

    nodes = {1000 + p: {"partition-id": p, "num-partitions": num_partitions} for p in partitions}
    return LocalGrid(app, nodes, example_config(data_dir, **overrides))


def start_supernodes(
    address: str, count: int, num_partitions: int, logs: Path
) -> list[subprocess.Popen[bytes]]:
    """`count` SuperNodes on this host dialing the SuperLink at `address`, node i playing
    partition i of `num_partitions` and logging to `logs`/supernode-i.log. The caller
    stops them (`stop_process`); if one fails to start, those already started are stopped."""
    nodes: list[subprocess.Popen[bytes]] = []
    try:
        for i in range(count):
            partition = {"partition-id": i, "num-partitions": num_partitions}
            options = SuperNodeOptions(address, free_loopback_port(), partition)
            nodes.append(start_supernode(options, logs / f"supernode-{i}.log"))
    except BaseException:
        for node in nodes:
            stop_process(node)
        raise
    return nodes
