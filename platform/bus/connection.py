"""The bus over one Redis connection: what the control plane and the agents do with it.

Every call raises `BusDown` when Redis cannot be reached; `keep_trying` turns a loop
body into one that waits with backoff and goes on when Redis is back. A restarted
Redis has a new `run_id`: that is how both sides notice that it forgot everything
(streams, groups, keys) and must be told again.
"""

import logging
import os
import threading
from collections.abc import Callable
from typing import Any, TypeVar, cast

import redis
from pydantic import ValidationError
from redis.exceptions import AuthenticationError, NoPermissionError, ResponseError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from atoll.platform.bus.keys import AGENT_GROUP, CONTROL_GROUP, BusKeys, SiteKeys
from atoll.platform.bus.messages import (
    AgentStatus,
    Beat,
    Command,
    Message,
    Telemetry,
)
from atoll.platform.core.errors import AtollError
from atoll.platform.net.backoff import Backoff

log = logging.getLogger("atoll.bus")
M = TypeVar("M", bound=Message)
SiteMessage = TypeVar("SiteMessage", AgentStatus, Telemetry)  # a message that names its site
Entry = tuple[str, M | None]  # stream entry id, and its message (None if unreadable)
# What XREAD and XREADGROUP answer, decoded (the client is made with decode_responses):
# per stream, its entries as (id, fields); fields are None for an entry deleted since.
StreamReply = list[tuple[str, list[tuple[str, dict[str, str] | None]]]]

COMMANDS_MAXLEN = 1000  # per site; a command older than a thousand others is long applied
STATUS_MAXLEN = 10_000


class BusDown(AtollError):
    """Redis cannot be reached."""


class AccessRefused(AtollError):
    """Redis refused to change its users (this connection's user may not)."""


class Bus:
    def __init__(self, url: str, keys: BusKeys, timeout_s: float = 5.0) -> None:
        self.url = url
        self.keys = keys
        self.timeout_s = timeout_s
        tls: dict[str, Any] = {}
        if url.startswith("rediss://") and os.environ.get("ATOLL_CA_FILE"):
            # Redis over TLS, its certificate checked against the federation's CA
            tls["ssl_ca_certs"] = os.environ["ATOLL_CA_FILE"]
        self.redis = redis.Redis.from_url(
            url,
            **tls,
            decode_responses=True,
            socket_timeout=timeout_s,
            socket_connect_timeout=timeout_s,
            retry_on_timeout=False,
        )

    def close(self) -> None:
        self.redis.close()

    def epoch(self) -> str:
        """Redis's run id: a new one means a restarted Redis that remembers nothing."""
        return self._do(lambda: str(self.redis.info("server")["run_id"]))

    # -- commands ------------------------------------------------------------------

    def publish_command(self, command: Command) -> str:
        stream = self.keys.commands(command.site)

        def publish() -> str:
            self._ensure_group(stream, AGENT_GROUP)
            return str(
                self.redis.xadd(stream, _fields(command), maxlen=COMMANDS_MAXLEN, approximate=True)
            )

        return self._do(publish)

    def read_commands(
        self, site: str, block_ms: int, pending: bool = False
    ) -> list[Entry[Command]]:
        """New commands, or with `pending` those delivered to this site's agent before but
        never acknowledged (it died before it could)."""
        return self._read_group(
            self.keys.commands(site), AGENT_GROUP, site, Command, block_ms, pending
        )

    def ack_command(self, site: str, entry_id: str) -> None:
        self._do(lambda: self.redis.xack(self.keys.commands(site), AGENT_GROUP, entry_id))

    # -- status --------------------------------------------------------------------

    def publish_status(self, status: AgentStatus) -> None:
        """Onto the site's own status stream (an agent's user may write only its own)."""
        stream = self.keys.status(status.site)
        self._do(
            lambda: self.redis.xadd(stream, _fields(status), maxlen=STATUS_MAXLEN, approximate=True)
        )

    def status_sites(self) -> list[str]:
        """The sites that have a status stream."""
        return self._sites_with(self.keys.status)

    def read_status(
        self, sites: list[str], consumer: str, block_ms: int, pending: bool = False
    ) -> list[tuple[str, str, AgentStatus | None]]:
        """(site, entry id, report) from the sites' status streams, through the control
        plane's consumer group (made where missing). A report is the site's whose stream it
        is on: one that names another site is dropped, and logged."""
        streams: dict[Any, Any] = {self.keys.status(s): "0" if pending else ">" for s in sites}

        def read() -> StreamReply:
            try:
                reply = self.redis.xreadgroup(
                    CONTROL_GROUP, consumer, streams, count=100,
                    block=None if pending else block_ms,
                )  # fmt: skip
            except ResponseError as e:
                if "NOGROUP" not in str(e):
                    raise
                for stream in streams:  # a new site's stream, or a restarted Redis
                    self._ensure_group(stream, CONTROL_GROUP)
                return []
            return cast(StreamReply, reply or [])

        return _own_entries(self._do(read), self.keys.status, AgentStatus)

    def ack_status(self, site: str, entry_ids: list[str]) -> None:
        if entry_ids:
            stream = self.keys.status(site)
            self._do(lambda: self.redis.xack(stream, CONTROL_GROUP, *entry_ids))

    # -- telemetry -----------------------------------------------------------------

    def publish_telemetry(self, samples: list[Telemetry], maxlen: int) -> None:
        """Each sample onto its site's stream (an agent's user may write only its own)."""

        def publish() -> None:
            pipe = self.redis.pipeline(transaction=False)
            for sample in samples:
                stream = self.keys.telemetry(sample.site)
                pipe.xadd(stream, _fields(sample), maxlen=maxlen, approximate=True)
            pipe.execute()

        if samples:
            self._do(publish)

    def telemetry_sites(self) -> list[str]:
        """The sites that have a telemetry stream."""
        return self._sites_with(self.keys.telemetry)

    def read_telemetry(
        self, after: dict[str, str], block_ms: int, count: int = 500
    ) -> list[tuple[str, str, Telemetry | None]]:
        """(site, entry id, sample) after each site's entry id. A sample is the site's whose
        stream it is on: one that names another site is dropped, and logged."""
        if not after:
            return []
        streams: dict[Any, Any] = {self.keys.telemetry(s): entry for s, entry in after.items()}
        found = self._do(lambda: self.redis.xread(streams, count=count, block=block_ms))
        return _own_entries(cast(StreamReply, found or []), self.keys.telemetry, Telemetry)

    def last_telemetry_id(self, site: str) -> str:
        """The site's newest sample's id ("0-0" when there is none)."""
        found = self._do(lambda: self.redis.xrevrange(self.keys.telemetry(site), count=1))
        return str(found[0][0]) if found else "0-0"

    # -- liveness ------------------------------------------------------------------

    def beat(self, site: str, beat: Beat, ttl_s: float) -> None:
        self._do(
            lambda: self.redis.set(
                self.keys.alive(site), beat.model_dump_json(), px=max(1, int(ttl_s * 1000))
            )
        )

    def beats(self, sites: list[str]) -> dict[str, Beat | None]:
        """Each site's last heartbeat, or None when its key has lapsed."""
        if not sites:
            return {}
        values = self._do(lambda: self.redis.mget([self.keys.alive(s) for s in sites]))
        return {
            site: None if value is None else Beat.model_validate_json(value)
            for site, value in zip(sites, values, strict=True)
        }

    # -- revocations ---------------------------------------------------------------

    def publish_crl(self, pem: str) -> None:
        self._do(lambda: self.redis.set(self.keys.crl, pem))

    def read_crl(self) -> str | None:
        return self._do(lambda: cast(str | None, self.redis.get(self.keys.crl)))

    # -- access (the control plane's: an agent's user may not) ----------------------

    def set_user(self, user: str, rules: tuple[str, ...]) -> None:
        try:
            self._do(lambda: cast(Any, self.redis).execute_command("ACL", "SETUSER", user, *rules))
        except ResponseError as e:
            raise AccessRefused(f"Redis refused ACL SETUSER {user}: {e}") from e

    def delete_user(self, user: str) -> None:
        """Remove the user; Redis also closes every connection it has open."""
        self._do(lambda: cast(Any, self.redis).execute_command("ACL", "DELUSER", user))

    # -- plumbing ------------------------------------------------------------------

    def _sites_with(self, keys: SiteKeys) -> list[str]:
        found = self._do(lambda: list(self.redis.scan_iter(keys.pattern, 1000)))
        return sorted(keys.site_of(str(k)) for k in found)

    def _read_group(
        self,
        stream: str,
        group: str,
        consumer: str,
        model: type[M],
        block_ms: int,
        pending: bool,
    ) -> list[Entry[M]]:
        def read() -> StreamReply:
            try:
                reply = self.redis.xreadgroup(
                    group,
                    consumer,
                    {stream: "0" if pending else ">"},
                    count=100,
                    block=None if pending else block_ms,
                )
            except ResponseError as e:
                if "NOGROUP" not in str(e):
                    raise
                # A restarted Redis lost the group (and the stream): make it again, from
                # the start, so that commands issued again before it existed are read.
                self._ensure_group(stream, group)
                return []
            return cast(StreamReply, reply or [])

        found = self._do(read)
        return [
            (entry, None if fields is None else _parse(model, fields))
            for _, entries in found
            for entry, fields in entries
        ]

    def _ensure_group(self, stream: str, group: str) -> None:
        try:
            self.redis.xgroup_create(stream, group, id="0", mkstream=True)
        except ResponseError as e:
            if "BUSYGROUP" not in str(e):
                raise

    def _do(self, call: Callable[[], "T"]) -> "T":
        try:
            return call()
        except (RedisConnectionError, RedisTimeoutError, OSError) as e:
            raise BusDown(f"Redis at {_safe(self.url)} is unreachable: {e}") from e
        except (NoPermissionError, AuthenticationError) as e:
            # e.g. a revoked site's user, deleted: it waits with backoff like any outage
            raise BusDown(f"Redis at {_safe(self.url)} refused this user: {e}") from e


T = TypeVar("T")


def _fields(message: Message) -> dict[Any, Any]:
    """A message as stream fields (redis-py's field types are wider than its str pairs)."""
    return dict(message.encode())


def _parse(model: type[M], fields: dict[str, str]) -> M | None:
    try:
        return model.decode(fields)
    except (KeyError, ValidationError, ValueError) as e:
        log.warning("dropping an unreadable %s message: %s", model.__name__, e)
        return None


def _safe(url: str) -> str:
    """The URL without its password, for messages."""
    scheme, sep, rest = url.partition("://")
    if "@" in rest:
        rest = "***@" + rest.split("@", 1)[1]
    return scheme + sep + rest


def keep_trying(
    step: Callable[[], None],
    stop: threading.Event,
    what: str,
    on_reconnect: Callable[[], None] = lambda: None,
    backoff: Backoff | None = None,
) -> None:
    """Run `step` until `stop` is set. While Redis is down, wait with backoff (the work
    of the caller's other threads goes on); once it is back, `on_reconnect` first.

    Redis counts as back only once a step has gone through: `on_reconnect` may touch
    nothing, and declaring it back before then logged "back" and "unreachable" in turn
    and kept the backoff at its shortest."""
    backoff = backoff or Backoff(0.2, 5.0)
    down = False
    while not stop.is_set():
        try:
            if down:
                on_reconnect()
            step()
        except BusDown as e:
            if not down:
                log.warning("%s: %s; retrying with backoff", what, e)
            down = True
            stop.wait(backoff.next_delay())
            continue
        if down:
            down = False
            log.warning("%s: Redis is back", what)
            backoff.reset()


def _own_entries(
    reply: StreamReply, keys: SiteKeys, model: type[SiteMessage]
) -> list[tuple[str, str, SiteMessage | None]]:
    """(site, entry id, message) for each entry of the sites' streams that `reply` holds;
    an unreadable message, or one that names another site, as None."""
    read = []
    for stream, entries in reply:
        site = keys.site_of(stream)
        for entry, fields in entries:
            message = None if fields is None else _parse(model, fields)
            read.append((site, entry, _own(site, message)))
    return read


def _own(site: str, message: SiteMessage | None) -> SiteMessage | None:
    """`message` if it names the site whose stream it is on; else None, logged: only that
    site's Redis user may write the stream, so what a message says of its sender is not
    what attributes it."""
    if message is not None and message.site != site:
        log.warning(
            "dropping a %s on site %s's stream that claims to be %s's",
            type(message).__name__,
            site,
            message.site,
        )
        return None
    return message
