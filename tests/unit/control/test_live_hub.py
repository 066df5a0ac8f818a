"""The live hub: ids, replay after a Last-Event-ID, and what cannot be resumed."""

import asyncio

from atoll.platform.service.live import Hub, LiveEvent


def run(coroutine):  # type: ignore[no-untyped-def]
    return asyncio.run(coroutine)


def test_events_get_increasing_ids_of_this_process() -> None:
    hub = Hub()
    for n in range(3):
        hub.publish(LiveEvent("job", {"n": n}))
    assert hub.last_id == f"{hub.epoch}:3"


def test_a_subscriber_gets_what_it_missed_then_what_comes() -> None:
    async def scenario() -> tuple[list[int], bool, int]:
        hub = Hub()
        for n in range(5):
            hub.publish(LiveEvent("job", {"n": n}))
        async with hub.subscribe(f"{hub.epoch}:2") as subscription:
            hub.publish(LiveEvent("job", {"n": 5}))
            live = await asyncio.wait_for(subscription.queue.get(), 1)
            return [e.data["n"] for e in subscription.missed], subscription.resumed, live.data["n"]

    missed, resumed, live = run(scenario())
    assert missed == [2, 3, 4]
    assert resumed
    assert live == 5


def test_ids_it_cannot_resume_from() -> None:
    async def resumed(last: str | None, replay: int = 3) -> bool:
        hub = Hub(replay=replay)
        for n in range(10):
            hub.publish(LiveEvent("job", {"n": n}))
        last = last.replace("EPOCH", hub.epoch) if last else last
        async with hub.subscribe(last) as subscription:
            return subscription.resumed

    assert run(resumed(None))  # a first connection: nothing to resume, nothing lost
    assert run(resumed("EPOCH:10"))  # up to date
    assert run(resumed("EPOCH:7"))  # 8, 9, 10 are kept
    assert not run(resumed("EPOCH:6"))  # 7 is gone
    assert not run(resumed("EPOCH:11"))  # from the future
    assert not run(resumed("other:5"))  # another process
    assert not run(resumed("EPOCH:x"))
