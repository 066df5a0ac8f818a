"""Between Flower's records and plain arrays: the edge of the sans-IO device core."""

from collections.abc import Mapping

import numpy as np
import numpy.typing as npt
from flwr.app import Array, ArrayRecord, Message

from atoll.platform.devices.replies import DeviceReply


def to_record(arrays: Mapping[str, npt.NDArray[np.generic]]) -> ArrayRecord:
    return ArrayRecord(
        array_dict={name: Array(np.ascontiguousarray(a)) for name, a in arrays.items()}
    )


def from_record(record: ArrayRecord) -> dict[str, npt.NDArray[np.generic]]:
    return {name: array.numpy() for name, array in record.items()}


def read_reply(message: Message) -> DeviceReply:
    """A reply as Flower's FedAvg reads one: its ArrayRecord, and its first MetricRecord."""
    content = message.content
    arrays = [from_record(r) for r in content.array_records.values()]
    metrics = next(iter(content.metric_records.values()), None)
    return DeviceReply(
        node_id=message.metadata.src_node_id,
        # Several ArrayRecords, or none, cannot be checked against the site's: empty fails.
        arrays=arrays[0] if len(arrays) == 1 else {},
        metrics=dict(metrics) if metrics is not None else {},
    )
