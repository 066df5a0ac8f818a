"""The geo tier inside a site's shard: a geo policy driven over real WAN links.

Shard s of a site mirrors shard s of every other site, so each shard owns one
policy (for its slice of the parameters) and one endpoint (its links to the same
shard elsewhere). Per clock the shard hands the policy its step, sends what the
policy says, applies what arrived, and holds the site's next clock until the
policy lets it go: the time held is the stall the policy accounts.
"""

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from atoll.platform.core.errors import AtollError
from atoll.platform.geo.codec import CodecError, decode, encode
from atoll.platform.geo.messages import BROADCAST, Lane, Outbound
from atoll.platform.geo.mirror_clock import Wait
from atoll.platform.geo.policies import build_policy
from atoll.platform.geo.policy import GeoPolicy
from atoll.platform.geo.rounds import ProtocolError
from atoll.platform.net import (
    ConnectTimeout,
    FlushTimeout,
    LinkOptions,
    LinkShape,
    Message,
    PeerLost,
    PeerRestarted,
    SiteEndpoint,
    TlsConfig,
)
from atoll.platform.site.spec import SiteGeo

_POLL_S = 0.02
_LINGER_S = 0.1
_CLOSE_FLUSH_S = 5.0
_START_WAIT_S = 30.0  # how long a starting site waits for its mirrors' links before training


class GeoStalled(AtollError):
    """The other sites did not let this one go on within the sync timeout."""


@dataclass
class _Usage:
    bytes_sent: int = 0
    at: float = 0.0


class GeoMirror:
    def __init__(
        self,
        config: SiteGeo,
        shard: int,
        shards: int,
        params: torch.Tensor,
        offset: int,
        class_counts: torch.Tensor | None = None,
    ) -> None:
        """`class_counts`: the site's samples per class, if it knows them (asp measures the
        sites' skew with them)."""
        self.config = config
        self.names = config.sites
        self.index = config.index
        self.policy: GeoPolicy = build_policy(
            config.policy,
            self.index,
            len(self.names),
            params,
            offset,
            start_s=time.monotonic(),
            class_counts=class_counts,
        )
        # The site's WAN link is shared by its shards: each gets an equal part of it.
        self.shapes = {
            peer: LinkShape(latency, bandwidth / shards)
            for peer, (latency, bandwidth) in config.links.items()
        }
        tls = None
        if config.tls_dir is not None:
            tls = TlsConfig.for_site(config.tls_dir, config.site, config.crl_file)
        directory = {site: urls[shard] for site, urls in config.endpoints.items()}
        self.endpoint = SiteEndpoint(
            config.site,
            directory,
            config.secret_file.read_bytes().strip() if config.secret_file else None,
            shapes=self.shapes,
            tls=tls,
            options=LinkOptions(lease_s=config.policy.lease_s),
        )
        self.decode_errors = 0
        self.protocol_errors = 0
        self.last_protocol_error: str | None = None
        self._usage = _Usage(at=time.monotonic())
        self.unacknowledged_at_close: str | None = None

    def start(self, rejoin: bool, stopping: Callable[[], bool] = lambda: False) -> None:
        self.endpoint.start()
        if rejoin:
            self._send(self.policy.rejoin())
        else:
            self._await_links(stopping)

    def _await_links(self, stopping: Callable[[], bool]) -> None:
        """Clock 0 starts once every link is up, as it does in the simulator: sites start
        their processes seconds apart, and a policy that waits on its mirrors' rounds would
        otherwise spend its first clocks on their start and handshakes. A mirror not up
        within `_START_WAIT_S` (not started, or down) is the policy's to handle, as one
        lost later is."""
        deadline = time.monotonic() + _START_WAIT_S
        while not stopping():
            left = deadline - time.monotonic()
            try:
                self.endpoint.wait_connected(timeout=max(0.0, min(1.0, left)))
                return
            except ConnectTimeout:
                if left <= 1.0:
                    return

    def after_clock(self, delta: torch.Tensor, lr_ratio: float) -> None:
        now = time.monotonic()
        self._observe_links(now)
        self._send(self.policy.after_clock(delta, now, lr_ratio))

    def sync(self, stopping: Callable[[], bool] = lambda: False) -> bool:
        """Apply what has arrived; return once the policy lets the site start a clock (True),
        or once `stopping()` says the site is to stop instead (False)."""
        deadline = time.monotonic() + self.config.sync_timeout_s
        self._drain(0.0)
        while isinstance(decision := self.policy.before_clock(time.monotonic()), Wait):
            if stopping():
                return False
            if time.monotonic() > deadline:
                waited_on = ", ".join(self.names[s] for s in decision.on) or "the other sites"
                raise GeoStalled(
                    f"{decision.reason}: waited {self.config.sync_timeout_s:.0f} s on {waited_on}"
                )
            self._drain(_POLL_S)
        return True

    def lookahead(self) -> torch.Tensor | None:
        """The policy's offset for the clock `sync` just let start (None: none)."""
        return self.policy.lookahead(time.monotonic())

    def finish(self) -> None:
        """Send what the policy still owes, then apply arrivals until it owes nothing."""
        self._send(self.policy.finish(time.monotonic()))
        deadline = time.monotonic() + self.config.sync_timeout_s
        while not self.policy.done(time.monotonic()):
            if time.monotonic() > deadline:
                raise GeoStalled(
                    f"final sync not complete after {self.config.sync_timeout_s:.0f} s"
                )
            self._drain(_POLL_S)

    def close(self) -> None:
        """Close the links. Called once the policy owes and expects nothing, so a message
        still unacknowledged then was received (its receiver finished because of it)."""
        # Linger so the acks for what arrived last leave before the connections close.
        time.sleep(_LINGER_S + 2 * max(latency for latency, _ in self.config.links.values()))
        try:
            self.endpoint.close(flush_timeout_s=_CLOSE_FLUSH_S)
        except FlushTimeout as e:
            self.unacknowledged_at_close = str(e)

    def stats(self) -> dict[str, Any]:
        links = self.endpoint.stats().links
        return {
            **self.policy.stats(),
            "links": {f"{self.config.site}->{peer}": s.bytes_sent for peer, s in links.items()},
            "bytes_sent": sum(s.bytes_sent for s in links.values()),
            "reconnects": sum(s.reconnects for s in links.values()),
            "decode_errors": self.decode_errors,
            "protocol_errors": self.protocol_errors,
            "last_protocol_error": self.last_protocol_error,
            "unacknowledged_at_close": self.unacknowledged_at_close,
        }

    # -- I/O -----------------------------------------------------------------------

    def _send(self, outbound: list[Outbound]) -> None:
        for out in outbound:
            payload = encode(out.message)
            targets = self.policy.mirrors if out.to == BROADCAST else [out.to]
            urgent = out.lane == Lane.CONTROL  # overtakes queued bulk data, as in the simulator
            for target in targets:
                self.endpoint.send(
                    self.names[target], payload, timeout=self.config.sync_timeout_s, urgent=urgent
                )

    def _drain(self, timeout: float) -> None:
        item = self.endpoint.receive(timeout)
        while item is not None:
            self._handle(item)
            item = self.endpoint.receive(0.0)

    def _handle(self, item: object) -> None:
        now = time.monotonic()
        if isinstance(item, Message):
            try:
                message = decode(item.payload)
                self._send(self.policy.receive(message, now))
            except CodecError:
                self.decode_errors += 1  # an authenticated peer sent garbage: drop it
            except ProtocolError as e:
                # Out of turn, e.g. from a peer's previous process: dropped, and counted.
                self.protocol_errors += 1
                self.last_protocol_error = str(e)
        elif isinstance(item, PeerRestarted):
            self._send(self.policy.mirror_restarted(self.names.index(item.peer), now))
        elif isinstance(item, PeerLost):
            pass  # the policy's own lease decides when a silent mirror stops counting

    def _observe_links(self, now: float) -> None:
        links = self.endpoint.stats().links
        for peer, link in links.items():
            self.policy.link_backlog(self.names.index(peer), link.backlog_s)
        sent = sum(link.bytes_sent for link in links.values())
        if now > self._usage.at:
            self.policy.wan_usage(8 * (sent - self._usage.bytes_sent) / (now - self._usage.at))
        self._usage = _Usage(sent, now)
