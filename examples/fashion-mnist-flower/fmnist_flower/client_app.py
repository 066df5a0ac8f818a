"""fmnist_flower: the ClientApp each device runs."""

import torch
from flwr.app import ArrayRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp

from fmnist_flower.task import Net, load_data
from fmnist_flower.task import test as test_fn
from fmnist_flower.task import train as train_fn

app = ClientApp()


def _device(context: Context) -> tuple[int, int]:
    return int(context.node_config["partition-id"]), int(context.node_config["num-partitions"])


@app.train()
def train(msg: Message, context: Context) -> Message:
    """Train the received model on this device's data."""
    torch.set_num_threads(1)
    model = Net()
    model.load_state_dict(msg.content["arrays"].to_torch_state_dict())
    partition_id, num_partitions = _device(context)
    trainset, _ = load_data(partition_id, num_partitions, dict(context.run_config))
    server_round = int(msg.content["config"]["server-round"])
    seed = int(context.run_config["seed"]) * 1_000_003 + server_round * 1009 + partition_id
    torch.manual_seed(seed)
    loss = train_fn(
        model,
        trainset,
        int(context.run_config["local-epochs"]),
        float(msg.content["config"].get("lr", context.run_config["lr"])),
        int(context.run_config["batch-size"]),
        seed,
    )
    metrics = MetricRecord({"train_loss": loss, "num-examples": len(trainset[1])})
    content = RecordDict({"arrays": ArrayRecord(model.state_dict()), "metrics": metrics})
    return Message(content=content, reply_to=msg)


@app.evaluate()
def evaluate(msg: Message, context: Context) -> Message:
    """Test the received model on this device's test data."""
    torch.set_num_threads(1)
    model = Net()
    model.load_state_dict(msg.content["arrays"].to_torch_state_dict())
    partition_id, num_partitions = _device(context)
    _, testset = load_data(partition_id, num_partitions, dict(context.run_config))
    loss, accuracy = test_fn(model, testset)
    metrics = MetricRecord(
        {"eval_loss": loss, "eval_acc": accuracy, "num-examples": len(testset[1])}
    )
    return Message(content=RecordDict({"metrics": metrics}), reply_to=msg)
