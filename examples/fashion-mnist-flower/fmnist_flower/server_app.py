"""fmnist_flower: the ServerApp for Flower's own FedAvg (one central server)."""

import json
from pathlib import Path

import torch
from flwr.app import ArrayRecord, ConfigRecord, Context
from flwr.serverapp import Grid, ServerApp
from flwr.serverapp.strategy import FedAvg

from fmnist_flower.task import Net

app = ServerApp()


@app.main()
def main(grid: Grid, context: Context) -> None:
    config = context.run_config
    torch.manual_seed(int(config["seed"]))
    strategy = FedAvg(
        fraction_evaluate=float(config["fraction-evaluate"]),
        min_train_nodes=1,
        min_evaluate_nodes=1,
        min_available_nodes=1,
    )
    result = strategy.start(
        grid=grid,
        initial_arrays=ArrayRecord(Net().state_dict()),
        train_config=ConfigRecord({"lr": float(config["lr"])}),
        num_rounds=int(config["num-server-rounds"]),
    )
    # Where asked (run config `result-file`), the per-round federated accuracy as JSON.
    out = str(config.get("result-file", ""))
    if out:
        rounds = {r: dict(m) for r, m in result.evaluate_metrics_clientapp.items()}
        Path(out).write_text(json.dumps(rounds))
