"""The device app the simulator plays: a Flower app laid out as the example is
(`examples/fashion-mnist-flower`): `<package>.client_app:app`, and in `<package>.task` the
model `Net`, `load_data(partition, partitions, config)` and `test(net, data)`.

The simulator imports it as a SuperNode would (its folder on sys.path), calls its
ClientApp unchanged, and evaluates the model it trains on a held-out test set.
"""

import importlib
import sys
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from flwr.clientapp import ClientApp

from atoll.platform.core.errors import AtollError
from atoll.platform.devices.local_grid import UserConfig
from atoll.platform.devices.site import Arrays

EXAMPLE_APP = Path(__file__).resolve().parents[2] / "examples" / "fashion-mnist-flower"


@dataclass(frozen=True)
class DeviceApp:
    folder: Path
    package: str
    client_app: ClientApp
    task: Any
    config: UserConfig  # the app's run config, from its pyproject.toml

    @property
    def model(self) -> str:
        return f"{self.package}.task:Net"

    @classmethod
    def load(cls, folder: Path) -> "DeviceApp":
        pyproject = folder / "pyproject.toml"
        if not pyproject.exists():
            raise AtollError(f"{folder} is no Flower app: it has no pyproject.toml")
        app = tomllib.loads(pyproject.read_text())["tool"]["flwr"]["app"]
        package = str(app["components"]["clientapp"]).split(".")[0]
        if str(folder) not in sys.path:
            sys.path.insert(0, str(folder))
        client = importlib.import_module(f"{package}.client_app")
        task = importlib.import_module(f"{package}.task")
        return cls(folder, package, client.app, task, dict(app.get("config", {})))

    def evaluator(self, config: UserConfig, samples: int) -> Callable[[Arrays], float]:
        """Accuracy of a model on the first `samples` of the app's test data."""
        whole_test_set = {**config, "alpha": 0.0, "max-test-samples": 0, "max-train-samples": 1}
        _, (x, y) = self.task.load_data(0, 1, whole_test_set)
        x, y = x[:samples], y[:samples]
        net = self.task.Net()

        def evaluate(arrays: Arrays) -> float:
            state = {k: torch.from_numpy(np.asarray(v).copy()) for k, v in arrays.items()}
            net.load_state_dict(state)
            return float(self.task.test(net, (x, y))[1])

        return evaluate
