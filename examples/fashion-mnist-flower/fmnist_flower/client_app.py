"""fmnist_flower: the ClientApp each device runs."""

import torch
from flwr.app import ArrayRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp

from fmnist_flower.task import Dataset, Net, load_data
from fmnist_flower.task import test as test_fn
from fmnist_flower.task import train as train_fn

app = ClientApp()


def _received_model(msg: Message) -> Net:
    # one thread: the devices of a simulation share the machine's cores
    torch.set_num_threads(1)
    model = Net()
    model.load_state_dict(msg.content["arrays"].to_torch_state_dict())
    return model


def _partition_id(context: Context) -> int:
    return int(context.node_config["partition-id"])


def _device_data(context: Context) -> tuple[Dataset, Dataset]:
    """This device's (train, test) data: its partition of the dataset."""
    num_partitions = int(context.node_config["num-partitions"])
    return load_data(_partition_id(context), num_partitions, dict(context.run_config))


@app.train()
def train(msg: Message, context: Context) -> Message:
    """Train the received model on this device's data."""
    model = _received_model(msg)
    trainset, _ = _device_data(context)
    server_round = int(msg.content["config"]["server-round"])
    seed = (
        int(context.run_config["seed"]) * 1_000_003 + server_round * 1009 + _partition_id(context)
    )
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
    model = _received_model(msg)
    _, testset = _device_data(context)
    loss, accuracy = test_fn(model, testset)
    metrics = MetricRecord(
        {"eval_loss": loss, "eval_acc": accuracy, "num-examples": len(testset[1])}
    )
    return Message(content=RecordDict({"metrics": metrics}), reply_to=msg)
