"""One peer as a site sees it, and the connection currently carrying it.

`PeerLink` holds what survives reconnects: both directions' sequence state, the
peer's incarnation, counters. Application threads touch only its outbound window
(under `lock`); everything else runs on the endpoint's event loop.

A `Session` is one authenticated connection. Three tasks run it: the reader
(frames in), the transmitter (picks the next frame: a due ack, then data, then a
heartbeat, and puts it on the shaped link) and, on shaped links, the deliverer,
which writes each frame to the socket when the link model says it arrives.
"""

import asyncio
import contextlib
import logging
import threading
import time
from collections import deque
from collections.abc import Callable

from atoll.platform.net import events
from atoll.platform.net.errors import BadFrame, EndpointClosed, MessageTooLarge, SendTimeout
from atoll.platform.net.frames import DATA_HEADER_BYTES, Ack, Data, decode, encode, wire_bytes
from atoll.platform.net.handshake import dialer_of
from atoll.platform.net.inbox import Inbox
from atoll.platform.net.options import LinkOptions
from atoll.platform.net.sequencing import InboundSequence, OutboundWindow
from atoll.platform.net.shaping import LinkShaper
from atoll.platform.net.topology import LinkShape
from atoll.platform.net.wire import CountingConnection, WireCounter

log = logging.getLogger("atoll.net")

# How far ahead of the link becoming free the transmitter may queue the next frame.
# Without it, every wake-up a little late would leave the shaped link idle for a
# moment and small frames would never reach the configured bandwidth.
SHAPING_HORIZON_S = 0.02

WebSocket = CountingConnection


class PeerLink:
    def __init__(
        self,
        site: str,
        peer: str,
        url: str,
        shape: LinkShape | None,
        options: LinkOptions,
        inbox: Inbox,
        on_state_change: Callable[[], None],
    ) -> None:
        self.site = site
        self.peer = peer
        self.url = url
        self.dials = dialer_of(site, peer) == site
        self.shape = shape
        self.options = options
        self.inbox = inbox
        self._on_state_change = on_state_change

        # shared with application threads
        self.lock = threading.Condition()
        self.window = OutboundWindow()
        self.closed = False
        self._wake_scheduled = False

        # event loop only
        self.inbound = InboundSequence(
            options.ack_every_messages, options.ack_every_bytes, options.ack_delay_s
        )
        self.peer_incarnation: bytes | None = None
        self.state: events.LinkState = "connecting"
        self.session: Session | None = None
        self.admitting = False  # an accepted connection is between handshake and session
        self.last_heard = time.monotonic()
        self.wire = WireCounter()
        self.highest_written = 0  # highest sequence number ever written, to tell resends
        self._restart: events.PeerRestarted | None = None  # detected, not yet announced
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None
        self.messages_sent = self.messages_resent = self.messages_acked = 0
        self.messages_received = 0
        self.connections = self.restarts = 0
        self.auth_failures = self.refused = self.bad_frames = 0
        self.last_error: str | None = None

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """Bind to the endpoint's event loop; call from that loop."""
        self._loop = loop
        self._wake = asyncio.Event()

    # application threads

    def enqueue(self, payload: bytes, timeout: float | None, urgent: bool = False) -> None:
        """Queue one message; waits while the queue is full (None: for ever, 0: not at all).

        An urgent message overtakes what this connection has not transmitted yet. With no
        connection up it cannot know what the peer got, so it joins the end of the queue
        (still ahead of bulk messages queued after it).
        """
        if len(payload) > self.options.max_message_bytes:
            raise MessageTooLarge(
                f"a message of {len(payload)} bytes to {self.peer!r} exceeds "
                f"max_message_bytes={self.options.max_message_bytes}"
            )
        size = DATA_HEADER_BYTES + len(payload)
        deadline = None if timeout is None else time.monotonic() + timeout
        with self.lock:
            while True:
                if self.closed or self._loop is None:
                    raise EndpointClosed(f"the link to {self.peer!r} is closed")
                if self.window.unacked_bytes + size <= self.options.queue_bytes:
                    break
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise SendTimeout(
                        f"the queue to {self.peer!r} stayed full for {timeout} s "
                        f"({self.window.unacked_bytes} of {self.options.queue_bytes} bytes "
                        f"queued or unacknowledged, link {self.state})"
                    )
                self.lock.wait(remaining)
            if urgent:
                session = self.session
                self.window.add_urgent(payload, session.sent_through if session else None)
            else:
                self.window.add(payload)
            wake = not self._wake_scheduled
            self._wake_scheduled = True
        if wake:  # one wake-up per burst of sends, not one per message
            try:
                self._loop.call_soon_threadsafe(self._wake_transmitter)
            except RuntimeError:  # the loop ended while we queued: closed under our feet
                raise EndpointClosed(f"the link to {self.peer!r} is closed") from None

    def wait_flushed(self, deadline: float) -> int:
        """Wait until the peer acknowledged everything; returns the messages still unacked."""
        with self.lock:
            while self.window.unacked_count and (remaining := deadline - time.monotonic()) > 0:
                self.lock.wait(remaining)
            return self.window.unacked_count

    def close_for_sending(self) -> None:
        with self.lock:
            self.closed = True
            self.lock.notify_all()

    def stats(self) -> events.LinkStats:
        with self.lock:
            queue_bytes, queue_messages = self.window.unacked_bytes, self.window.unacked_count
            backlog_s = self._backlog_s(time.monotonic())
        return events.LinkStats(
            peer=self.peer,
            state=self.state,
            bytes_sent=self.wire.sent,
            bytes_received=self.wire.received,
            messages_sent=self.messages_sent,
            messages_resent=self.messages_resent,
            messages_acked=self.messages_acked,
            messages_received=self.messages_received,
            duplicates_dropped=self.inbound.duplicates,
            queue_bytes=queue_bytes,
            queue_messages=queue_messages,
            backlog_s=backlog_s,
            connections=self.connections,
            reconnects=max(0, self.connections - 1),
            restarts=self.restarts,
            auth_failures=self.auth_failures,
            refused=self.refused,
            bad_frames=self.bad_frames,
            last_error=self.last_error,
        )

    def _backlog_s(self, now: float) -> float:
        """Serialisation still ahead: frames scheduled on the shaped link, then the queue.

        Called under `lock` from any thread; the session's fields it reads are written by
        the event loop, so the answer is a snapshot, good to within one frame.
        """
        if self.shape is None:
            return 0.0
        session = self.session
        if session is None or session.shaper is None:  # down: everything unacked goes again
            waiting, on_wire = self.window.frame_sizes_after(0), 0.0
        else:
            waiting = self.window.frame_sizes_after(session.sent_through)
            on_wire = max(0.0, session.shaper.free_s - now)
        queued = sum(wire_bytes(size, self.dials) for size in waiting)
        return on_wire + 8 * queued / self.shape.bandwidth_bps

    # event loop

    def _wake_transmitter(self) -> None:
        with self.lock:
            self._wake_scheduled = False
        assert self._wake is not None
        self._wake.set()

    def new_shaper(self) -> LinkShaper | None:
        return LinkShaper(self.shape) if self.shape is not None else None

    async def send_shaped(self, ws: WebSocket, shaper: LinkShaper | None, frame: bytes) -> None:
        """Write one handshake frame when the link model says it arrives."""
        if shaper is not None:
            departure = shaper.schedule(wire_bytes(len(frame), self.dials), time.monotonic())
            await asyncio.sleep(max(0.0, departure.arrive_s - time.monotonic()))
        await ws.send(frame)

    def begin_session(self, peer_incarnation: bytes) -> int:
        """The peer proved who it is; returns how far this side has received from it.

        A different incarnation than last time means the peer restarted: it lost both
        directions' sequence state, so ours starts again too.
        """
        if self.peer_incarnation is not None and peer_incarnation != self.peer_incarnation:
            with self.lock:
                dropped, _ = self.window.reset()
                self.lock.notify_all()
            self.inbound.reset()
            self.highest_written = 0
            if self._restart is not None:  # restarted twice before we got through
                dropped += self._restart.dropped_messages
            self._restart = events.PeerRestarted(self.peer, dropped)
            log.warning(
                "%s: %s restarted; dropped %d unacknowledged messages",
                self.site,
                self.peer,
                dropped,
            )
        self.peer_incarnation = peer_incarnation
        return self.inbound.received_through

    async def run_session(
        self, ws: WebSocket, shaper: LinkShaper | None, peer_received_through: int
    ) -> None:
        """Carry the link over `ws` until it fails; raises what ended it."""
        with self.lock:
            sent_through = self.window.resume_from(peer_received_through)
            self.lock.notify_all()
        event: events.Received | None = None
        if self._restart is not None:
            event, self._restart = self._restart, None
            self.restarts += 1
        elif self.connections == 0 or self.state == "lost":
            event = events.PeerConnected(self.peer)
        self.connections += 1
        self.last_heard = time.monotonic()
        self.last_error = None
        session = Session(self, ws, shaper, sent_through)
        self.session = session
        self._set_state("up")
        if event is not None:
            self.inbox.put(event)  # before any message of this session
        log.info("%s: link to %s up (connection %d)", self.site, self.peer, self.connections)
        try:
            await session.run()
        except Exception as exc:
            if self.state != "closed":
                log.info("%s: link to %s down: %s", self.site, self.peer, exc)
            raise
        finally:
            if self.session is session:
                self.session = None
                if self.state == "up":
                    self._set_state("reconnecting")

    def check_lease(self, now: float) -> None:
        silent = now - self.last_heard
        if silent <= self.options.lease_s:
            return
        if self.state in ("up", "reconnecting"):
            log.warning("%s: nothing heard from %s for %.1f s", self.site, self.peer, silent)
            self._set_state("lost")
            self.inbox.put(events.PeerLost(self.peer, silent))
        if self.session is not None:  # up but silent: half-open, or the peer is frozen
            self.session.abort()

    def shut(self) -> None:
        """The endpoint is closing: no more redialing, lease checks or state changes."""
        self._set_state("closed")

    @property
    def is_shut(self) -> bool:
        """The endpoint shut it (`shut`): it never connects again."""
        return self.state == "closed"

    def _set_state(self, state: events.LinkState) -> None:
        self.state = state
        self._on_state_change()


class Session:
    def __init__(
        self, link: PeerLink, ws: WebSocket, shaper: LinkShaper | None, sent_through: int
    ) -> None:
        self.link = link
        self.ws = ws
        self.shaper = shaper
        self.sent_through = sent_through  # frames after this one go out on this connection
        self.last_transmit = time.monotonic()
        self.delay_line: deque[tuple[float, bytes, int]] = deque()  # (arrival, frame, seq)
        self._delay_line_ready = asyncio.Event()
        self._ended = asyncio.Event()

    async def run(self) -> None:
        tasks = [asyncio.create_task(self._read()), asyncio.create_task(self._transmit())]
        if self.shaper is not None:
            tasks.append(asyncio.create_task(self._deliver()))
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                task.result()  # raises what ended the session
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            self._ended.set()

    async def close(self) -> None:
        """Close with a closing handshake, so the peer sees a clean end, not a drop."""
        await self.ws.close(1001, "site closing")

    def abort(self) -> None:
        """Drop the connection now, without a closing handshake (it may be dead)."""
        self.ws.transport.abort()

    async def ended(self) -> None:
        await self._ended.wait()

    async def responds(self, timeout: float) -> bool:
        """Whether the peer at the other end still answers a WebSocket ping."""
        try:
            pong = await self.ws.ping()
            await asyncio.wait_for(pong, timeout)
        except Exception:  # closed, timed out: either way not a live connection
            return False
        return True

    async def _read(self) -> None:
        link = self.link
        while True:
            await link.inbox.wait_for_space()
            raw = await self.ws.recv()
            now = time.monotonic()
            link.last_heard = now
            frame = decode(raw)
            if isinstance(frame, Data):
                pending_before = link.inbound.ack_deadline()
                if link.inbound.accept(frame.seq, len(raw), now):
                    link.messages_received += 1
                    link.inbox.put(events.Message(link.peer, frame.payload))
                if link.inbound.ack_deadline() != pending_before:
                    self._wake()  # the transmitter recomputes when to send the ack
            elif isinstance(frame, Ack):
                with link.lock:
                    before = link.window.unacked_count
                    if link.window.ack(frame.through):
                        link.lock.notify_all()
                    link.messages_acked += before - link.window.unacked_count
            else:
                raise BadFrame(f"{type(frame).__name__} frame after the handshake")

    def _wake(self) -> None:
        assert self.link._wake is not None
        self.link._wake.set()

    async def _transmit(self) -> None:
        link = self.link
        wake = link._wake
        assert wake is not None
        while True:
            wake.clear()
            now = time.monotonic()
            frame, seq = self._next_frame(now)
            if frame is None:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self._idle_for(now)):
                        await wake.wait()
                continue
            self.last_transmit = now
            if self.shaper is None:
                await self._write(frame, seq)
                continue
            departure = self.shaper.schedule(wire_bytes(len(frame), link.dials), now)
            self.delay_line.append((departure.arrive_s, frame, seq))
            self._delay_line_ready.set()
            busy = departure.free_s - SHAPING_HORIZON_S - time.monotonic()
            if busy > 0:  # the link is serialising; the next frame waits its turn
                await asyncio.sleep(busy)

    def _next_frame(self, now: float) -> tuple[bytes | None, int]:
        link = self.link
        if link.inbound.ack_due(now):
            return encode(Ack(link.inbound.take_ack())), 0
        with link.lock:
            if self.sent_through < link.window.last_seq:
                self.sent_through += 1
                return link.window.frame(self.sent_through), self.sent_through
        if now - self.last_transmit >= link.options.heartbeat_interval_s:
            return encode(Ack(link.inbound.take_ack())), 0
        return None, 0

    def _idle_for(self, now: float) -> float:
        heartbeat_at = self.last_transmit + self.link.options.heartbeat_interval_s
        ack_at = self.link.inbound.ack_deadline()
        wake_at = heartbeat_at if ack_at is None else min(ack_at, heartbeat_at)
        return max(0.0, wake_at - now)

    async def _deliver(self) -> None:
        while True:
            if not self.delay_line:
                self._delay_line_ready.clear()
                await self._delay_line_ready.wait()
                continue
            arrive_s, frame, seq = self.delay_line[0]
            early = arrive_s - time.monotonic()
            if early > 0:
                await asyncio.sleep(early)
                continue
            self.delay_line.popleft()
            await self._write(frame, seq)

    async def _write(self, frame: bytes, seq: int) -> None:
        await self.ws.send(frame)
        if seq:
            link = self.link
            link.messages_sent += 1
            if seq <= link.highest_written:
                link.messages_resent += 1
            else:
                link.highest_written = seq
