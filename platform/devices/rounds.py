"""Device rounds over a Flower Grid: send the site's parameters, collect, check, aggregate.

The Grid is Flower's: the SuperLink's in a deployed site, an in-process one in the
simulator. Each round pushes one message per connected device and pulls replies
until the round's collector (collect.py) says it is over; replies are checked and
aggregated by replies.py. A reply that arrives after its round closed is counted
and dropped.
"""

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
from flwr.app import ConfigRecord, Message, MessageType, RecordDict
from flwr.serverapp import Grid

from atoll.platform.core.errors import AtollError
from atoll.platform.devices.collect import Offer, RoundCollector, State
from atoll.platform.devices.records import read_reply, to_record
from atoll.platform.devices.replies import (
    ArraySpec,
    DeviceReply,
    Refusal,
    check_reply,
    fedavg,
    specs_of,
    weighted_metrics,
)

log = logging.getLogger("atoll.devices")

Arrays = Mapping[str, npt.NDArray[np.generic]]
ConfigValue = int | float | str | bool


class NotEnoughDevices(AtollError):
    """Fewer devices than the minimum connected, or replied, in time."""


@dataclass(frozen=True)
class RoundOptions:
    min_replies: int = 1
    timeout_s: float = 600.0  # a round's deadline
    poll_s: float = 0.2
    wait_for_devices_s: float = 300.0  # at the start of each round


@dataclass
class RoundOutcome:
    server_round: int
    devices: int  # messages sent
    replies: list[DeviceReply] = field(default_factory=list)  # checked and aggregated
    refusals: list[Refusal] = field(default_factory=list)
    late: int = 0  # replies to earlier rounds that arrived during this one, dropped
    silent: list[int] = field(default_factory=list)  # node ids that had not replied
    arrays: dict[str, npt.NDArray[np.generic]] | None = None  # None: the round failed
    metrics: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0


class DeviceRounds:
    def __init__(
        self,
        grid: Grid,
        options: RoundOptions,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.grid, self.options, self.clock, self.sleep = grid, options, clock, sleep
        self._closed: dict[str, int] = {}  # message id of an earlier round -> its round

    def devices(self) -> list[int]:
        """The connected devices, once at least `min_replies` are (or NotEnoughDevices)."""
        deadline = self.clock() + self.options.wait_for_devices_s
        while True:
            nodes = sorted(self.grid.get_node_ids())
            if len(nodes) >= self.options.min_replies:
                return nodes
            if self.clock() >= deadline:
                raise NotEnoughDevices(
                    f"{len(nodes)} devices connected after {self.options.wait_for_devices_s:.0f}"
                    f" s; the site needs at least {self.options.min_replies}"
                )
            self.sleep(self.options.poll_s)

    def train(
        self, server_round: int, arrays: Arrays, config: Mapping[str, ConfigValue]
    ) -> RoundOutcome:
        """One training round: the aggregate of the checked replies, or None."""
        outcome = self._round(server_round, MessageType.TRAIN, arrays, config)
        if outcome.replies:
            outcome.arrays = fedavg(outcome.replies, specs_of(arrays))
        return outcome

    def evaluate(
        self, server_round: int, arrays: Arrays, config: Mapping[str, ConfigValue]
    ) -> RoundOutcome:
        """One evaluation round: the devices' metrics weighted by `num-examples`."""
        return self._round(server_round, MessageType.EVALUATE, arrays, config)

    def _round(
        self,
        server_round: int,
        kind: str,
        arrays: Arrays,
        config: Mapping[str, ConfigValue],
    ) -> RoundOutcome:
        start = self.clock()
        nodes = self.devices()
        content = RecordDict(
            {
                "arrays": to_record(arrays),
                "config": ConfigRecord({**config, "server-round": server_round}),
            }
        )
        messages = [
            Message(
                content=content, dst_node_id=node, message_type=kind, group_id=str(server_round)
            )
            for node in nodes
        ]
        ids = list(self.grid.push_messages(messages))
        collector = RoundCollector(
            server_round,
            dict(zip(ids, nodes, strict=True)),
            min(self.options.min_replies, len(nodes)),
            start + self.options.timeout_s,
        )
        outcome = RoundOutcome(server_round, len(nodes))
        expected = specs_of(arrays) if kind == MessageType.TRAIN else None
        while collector.state(self.clock()) == State.COLLECTING:
            for reply in self.grid.pull_messages(collector.pending + list(self._closed)):
                self._take(reply, collector, expected, outcome)
            if collector.pending and collector.state(self.clock()) == State.COLLECTING:
                self.sleep(self.options.poll_s)
        for message_id in collector.pending:
            self._closed[message_id] = server_round
        outcome.silent = collector.silent_nodes
        outcome.metrics = weighted_metrics(outcome.replies)
        outcome.seconds = self.clock() - start
        if collector.state(self.clock()) == State.FAILED:
            log.warning(
                "round %d (%s): %d of %d devices replied usably before the deadline; "
                "at least %d needed",
                server_round, kind, collector.usable, len(nodes), collector.min_replies,
            )  # fmt: skip
            outcome.replies = []
        elif outcome.silent:
            log.info(
                "round %d (%s): went on without nodes %s (no reply by the deadline)",
                server_round, kind, outcome.silent,
            )  # fmt: skip
        return outcome

    def _take(
        self,
        message: Message,
        collector: RoundCollector,
        expected: Mapping[str, ArraySpec] | None,
        outcome: RoundOutcome,
    ) -> None:
        message_id = message.metadata.reply_to_message_id
        node = message.metadata.src_node_id
        if message_id in self._closed:
            outcome.late += 1
            log.info(
                "late reply from node %d to round %d dropped", node, self._closed.pop(message_id)
            )
            return
        offer = collector.offer(message_id)
        if offer != Offer.ACCEPTED:
            log.info("reply from node %d dropped: %s", node, offer.value)
            return
        if message.has_error():
            collector.refuse(message_id)
            outcome.refusals.append(Refusal(node, f"the device failed: {message.error.reason}"))
            log.warning("%s", outcome.refusals[-1])
            return
        reply = read_reply(message)
        refusal = check_reply(reply, expected)
        if refusal is not None:
            collector.refuse(message_id)
            outcome.refusals.append(refusal)
            log.warning("%s", refusal)
            return
        outcome.replies.append(reply)
