import asyncio
import threading
import time

from atoll.platform.net.events import Message, PeerConnected
from atoll.platform.net.inbox import Inbox


def test_items_come_out_in_order_and_get_waits_only_as_told() -> None:
    inbox = Inbox(limit_bytes=100)
    assert inbox.get(timeout=0) is None
    started = time.monotonic()
    assert inbox.get(timeout=0.05) is None
    assert time.monotonic() - started >= 0.05
    inbox.put(PeerConnected("a"))
    inbox.put(Message("a", b"1"))
    inbox.put(Message("a", b"2"))
    assert inbox.get(timeout=0) == PeerConnected("a")
    assert inbox.get_all() == [Message("a", b"1"), Message("a", b"2")]


def test_get_wakes_up_when_something_arrives_from_another_thread() -> None:
    inbox = Inbox(limit_bytes=100)
    threading.Timer(0.05, inbox.put, args=(Message("b", b"x"),)).start()
    assert inbox.get(timeout=5) == Message("b", b"x")


def test_a_full_inbox_holds_back_the_reader_until_the_application_takes_some() -> None:
    async def scenario() -> list[str]:
        inbox = Inbox(limit_bytes=10)
        inbox.attach(asyncio.get_running_loop())
        steps = []

        async def reader() -> None:
            for i in range(3):
                await inbox.wait_for_space()
                inbox.put(Message("a", bytes(6)))
                steps.append(f"put {i}")

        task = asyncio.create_task(reader())
        await asyncio.sleep(0.05)
        steps.append(f"full={inbox.full} bytes={inbox.queued_bytes}")
        inbox.put(PeerConnected("a"))  # events weigh nothing and always get in
        steps.append(f"bytes={inbox.queued_bytes}")
        await asyncio.to_thread(inbox.get, 0)  # the application takes one, from its thread
        await asyncio.sleep(0.05)
        steps.append(f"bytes={inbox.queued_bytes}")
        task.cancel()
        return steps

    assert asyncio.run(scenario()) == [
        "put 0",
        "put 1",
        "full=True bytes=12",
        "bytes=12",
        "put 2",
        "bytes=12",
    ]
