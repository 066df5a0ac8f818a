"""A Flower Grid whose devices are ClientApps in this process: the simulator's devices.

The ClientApp is called exactly as a SuperNode calls it (a Message in, a Message out,
with the device's Context), so the code that runs on a phone runs here unchanged. Each
device's reply is computed when its message is pushed and handed out when pulled.
"""

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from uuid import uuid4

from flwr.app import Context, Message, RecordDict
from flwr.clientapp import ClientApp
from flwr.common.constant import SUPERLINK_NODE_ID
from flwr.serverapp import Grid
from flwr.supercore.run import Run
from flwr.supercore.task_identity import TaskIdentity

UserConfig = dict[str, int | float | str | bool]


@dataclass(frozen=True)
class Exchange:
    """One message to a device and its reply, for whoever accounts time and bytes."""

    node_id: int
    sent: Message
    reply: Message
    compute_s: float  # wall time the ClientApp took here


class LocalGrid(Grid):
    def __init__(
        self,
        app: ClientApp,
        node_configs: dict[int, UserConfig],
        run_config: UserConfig,
        on_exchange: Callable[[Exchange], None] | None = None,
        run_id: int = 1,
    ) -> None:
        self.app = app
        self.contexts = {
            node: Context(run_id, node, dict(config), RecordDict(), dict(run_config))
            for node, config in node_configs.items()
        }
        self.on_exchange = on_exchange
        # What a ServerApp process learns from its SuperLink: messages are made with it.
        TaskIdentity.run_id, TaskIdentity.node_id, TaskIdentity.task_id = (
            run_id,
            SUPERLINK_NODE_ID,
            run_id,
        )
        self._run = Run.create_empty(run_id)
        self._replies: dict[str, Message] = {}
        self.offline: set[int] = set()  # devices that take messages but never answer
        self._held: dict[int, dict[str, Message]] = {}  # device -> replies it holds back

    def set_run(self, run: Run) -> None:
        self._run = run

    @property
    def run(self) -> Run:
        return self._run

    def create_message(
        self,
        content: RecordDict,
        message_type: str,
        dst_node_id: int,
        group_id: str,
        ttl: float | None = None,
    ) -> Message:
        return Message(content, dst_node_id, message_type, ttl=ttl, group_id=group_id)

    def get_node_ids(self) -> Iterable[int]:
        return list(self.contexts)

    def push_messages(self, messages: Iterable[Message]) -> Iterable[str]:
        ids = []
        for message in messages:
            message_id = str(uuid4())
            message.metadata.__dict__["_message_id"] = message_id
            message.metadata.__dict__["_run_id"] = self._run.run_id
            ids.append(message_id)
            node = message.metadata.dst_node_id
            if node in self.offline:
                continue
            start = time.perf_counter()
            reply = self.app(message, self.contexts[node])
            compute_s = time.perf_counter() - start
            reply.metadata.__dict__["_src_node_id"] = node
            held = self._held.get(node)
            (self._replies if held is None else held)[message_id] = reply
            if self.on_exchange is not None:
                self.on_exchange(Exchange(node, message, reply, compute_s))
        return ids

    def hold(self, node: int) -> None:
        """`node` computes its replies but sends none until released (a slow device)."""
        self._held.setdefault(node, {})

    def release(self, node: int) -> None:
        """`node` sends every reply it held back."""
        self._replies.update(self._held.pop(node, {}))

    def pull_messages(self, message_ids: Iterable[str]) -> Iterable[Message]:
        return [self._replies.pop(m) for m in message_ids if m in self._replies]

    def send_and_receive(
        self, messages: Iterable[Message], *, timeout: float | None = None
    ) -> Iterable[Message]:
        return self.pull_messages(self.push_messages(messages))
