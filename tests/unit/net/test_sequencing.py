from collections import deque

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from atoll.platform.net.errors import BadFrame
from atoll.platform.net.frames import Data, decode
from atoll.platform.net.sequencing import InboundSequence, OutboundWindow


def test_the_window_numbers_messages_and_keeps_them_until_acked() -> None:
    window = OutboundWindow()
    assert [window.add(p) for p in (b"a", b"bb", b"ccc")] == [1, 2, 3]
    assert decode(window.frame(2)) == Data(2, b"bb")
    assert (window.unacked_count, window.unacked_bytes) == (3, 3 * 9 + 6)
    assert window.ack(2) == 9 + 1 + 9 + 2
    assert (window.unacked_count, window.acked_through) == (1, 2)
    assert window.ack(1) == 0  # a stale ack changes nothing
    assert window.unacked_count == 1


def test_an_ack_beyond_what_was_sent_is_a_protocol_violation() -> None:
    window = OutboundWindow()
    window.add(b"x")
    with pytest.raises(BadFrame, match="ack for message 2, but only 1 were sent"):
        window.ack(2)


def test_resuming_acks_what_the_peer_has_and_resends_the_rest() -> None:
    window = OutboundWindow()
    for payload in (b"1", b"2", b"3", b"4"):
        window.add(payload)
    window.ack(1)
    assert window.resume_from(3) == 3  # transmit again after message 3
    assert window.unacked_count == 1
    assert decode(window.frame(4)) == Data(4, b"4")
    with pytest.raises(BadFrame, match="already acknowledged 3"):
        window.resume_from(2)  # a peer cannot forget what it acknowledged


def test_reset_drops_the_backlog_and_starts_again_at_one() -> None:
    window = OutboundWindow()
    for payload in (b"a", b"b", b"c"):
        window.add(payload)
    window.ack(1)
    assert window.reset() == (2, 20)
    assert (window.unacked_count, window.unacked_bytes, window.last_seq) == (0, 0, 0)
    assert window.add(b"new") == 1


def payloads_in_order(window: OutboundWindow) -> list[bytes]:
    unacked = range(window.acked_through + 1, window.last_seq + 1)
    return [decode(window.frame(s)).payload for s in unacked]  # type: ignore[union-attr]


def test_an_urgent_message_overtakes_only_what_was_not_transmitted() -> None:
    window = OutboundWindow()
    for payload in (b"bulk1", b"bulk2", b"bulk3"):
        window.add(payload)
    assert window.add_urgent(b"clock1", transmitted_through=1) == 2
    assert window.add_urgent(b"clock2", transmitted_through=1) == 3  # behind the first
    assert payloads_in_order(window) == [b"bulk1", b"clock1", b"clock2", b"bulk2", b"bulk3"]
    assert (window.unacked_count, window.unacked_bytes) == (5, 5 * 9 + 5 * 3 + 6 * 2)
    assert decode(window.frame(4)) == Data(4, b"bulk2")  # renumbered on the way out


def test_an_urgent_message_on_an_empty_queue_just_goes_last() -> None:
    window = OutboundWindow()
    window.add(b"bulk1")
    window.ack(1)
    assert window.add_urgent(b"clock", transmitted_through=0) == 2  # never before the acked
    window.add(b"bulk2")
    assert window.add_urgent(b"later", transmitted_through=2) == 3
    assert payloads_in_order(window) == [b"clock", b"later", b"bulk2"]
    assert window.frame_sizes_after(2) == [9 + 5, 9 + 5]


def inbound(every: int = 3, every_bytes: int = 1000, delay: float = 0.5) -> InboundSequence:
    return InboundSequence(every, every_bytes, delay)


def test_the_receiver_accepts_each_number_once_and_in_order() -> None:
    seq = inbound()
    assert seq.accept(1, 10, now=0.0)
    assert seq.accept(2, 10, now=0.0)
    assert not seq.accept(2, 10, now=0.0)
    assert not seq.accept(1, 10, now=0.0)
    assert (seq.received_through, seq.duplicates) == (2, 2)
    with pytest.raises(BadFrame, match="message 4 arrived after 2"):
        seq.accept(4, 10, now=0.0)


def test_acks_are_batched_by_count() -> None:
    seq = inbound(every=3)
    for n in (1, 2):
        seq.accept(n, 10, now=0.0)
        assert not seq.ack_due(now=0.0)
    seq.accept(3, 10, now=0.0)
    assert seq.ack_due(now=0.0)
    assert seq.take_ack() == 3
    assert seq.ack_deadline() is None
    assert not seq.ack_due(now=100.0)


def test_acks_are_batched_by_bytes() -> None:
    seq = inbound(every=100, every_bytes=1000)
    seq.accept(1, 999, now=0.0)
    assert not seq.ack_due(now=0.0)
    seq.accept(2, 1, now=0.0)
    assert seq.ack_due(now=0.0)


def test_a_lone_message_is_acked_after_the_delay() -> None:
    seq = inbound(every=100, delay=0.5)
    seq.accept(1, 10, now=2.0)
    seq.accept(2, 10, now=2.4)
    assert seq.ack_deadline() == 2.5  # counted from the first unacknowledged message
    assert not seq.ack_due(now=2.49)
    assert seq.ack_due(now=2.5)
    assert seq.take_ack() == 2


def test_a_duplicate_asks_for_an_ack_at_once() -> None:
    seq = inbound(every=100)
    seq.accept(1, 10, now=0.0)
    seq.take_ack()
    seq.accept(1, 10, now=1.0)  # the sender missed our ack
    assert seq.ack_due(now=1.0)
    assert seq.take_ack() == 1


def test_reset_starts_the_receiver_again_at_one() -> None:
    seq = inbound()
    seq.accept(1, 10, now=0.0)
    seq.reset()
    assert seq.received_through == 0
    assert seq.ack_deadline() is None
    assert seq.accept(1, 10, now=0.0)


class LossyLink:
    """Sender and receiver joined by connections that can be cut at any moment, driven
    the way a Session drives them: transmit after `sent_through`, resume on reconnect."""

    def __init__(self) -> None:
        self.window = OutboundWindow()
        self.receiver = InboundSequence(ack_every_messages=4, ack_every_bytes=10**9, ack_delay_s=1)
        self.sent: list[bytes] = []
        self.delivered: list[bytes] = []
        self.up = True
        self.sent_through = 0
        self.data: deque[bytes] = deque()  # frames in flight
        self.acks: deque[int] = deque()
        self.now = 0.0

    def step(self, op: str) -> None:
        self.now += 0.25
        if op == "send":
            payload = str(len(self.sent)).encode()
            self.sent.append(payload)
            self.window.add(payload)
        elif op == "urgent":  # as PeerLink does: ahead of the queue only while connected
            payload = b"u" + str(len(self.sent)).encode()
            self.sent.append(payload)
            self.window.add_urgent(payload, self.sent_through if self.up else None)
        elif op == "transmit" and self.up and self.sent_through < self.window.last_seq:
            self.sent_through += 1
            self.data.append(self.window.frame(self.sent_through))
        elif op == "deliver" and self.data:
            frame = decode(self.data.popleft())
            assert isinstance(frame, Data)
            if self.receiver.accept(frame.seq, len(frame.payload), self.now):
                self.delivered.append(frame.payload)
            if self.receiver.ack_due(self.now):
                self.acks.append(self.receiver.take_ack())
        elif op == "ack" and self.acks:
            self.window.ack(self.acks.popleft())
        elif op == "cut":
            self.up = False
            self.data.clear()
            self.acks.clear()
        elif op == "reconnect" and not self.up:
            self.up = True
            self.sent_through = self.window.resume_from(self.receiver.received_through)

    def settle(self) -> None:
        self.step("cut")
        self.step("reconnect")
        while self.sent_through < self.window.last_seq or self.data:
            self.step("transmit")
            self.step("deliver")
        self.window.ack(self.receiver.take_ack())


OPS = st.sampled_from(
    ["send", "send", "transmit", "transmit", "deliver", "ack", "cut", "reconnect"]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(OPS, max_size=300))
def test_any_pattern_of_cuts_delivers_everything_exactly_once_in_order(ops: list[str]) -> None:
    link = LossyLink()
    for op in ops:
        link.step(op)
    link.settle()
    assert link.delivered == link.sent
    assert link.window.unacked_count == 0
    assert link.window.unacked_bytes == 0


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(OPS, st.just("urgent")), max_size=300))
def test_urgent_messages_arrive_exactly_once_in_order_among_their_kind(ops: list[str]) -> None:
    link = LossyLink()
    for op in ops:
        link.step(op)
    link.settle()
    assert sorted(link.delivered) == sorted(link.sent)
    assert len(set(link.delivered)) == len(link.delivered)
    for urgent in (True, False):
        kind = [p for p in link.sent if p.startswith(b"u") == urgent]
        assert [p for p in link.delivered if p.startswith(b"u") == urgent] == kind
    assert link.window.unacked_count == 0
    assert link.window.unacked_bytes == 0
