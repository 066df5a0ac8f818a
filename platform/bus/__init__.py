"""The Redis bus between the control plane and the edge agents.

- `{prefix}:commands:{site}`: a stream per site, read by the site's agent through the
  consumer group `agent`. A command stays pending until the agent has applied it and
  acknowledged it, so it is delivered at least once; the agent's ledger makes a
  second delivery do nothing more.
- `{prefix}:status`: the agents' status reports (full snapshots, so a lost or repeated
  one changes nothing), read by the control plane through the consumer group `control`.
- `{prefix}:telemetry`: loss, accuracy, bytes and stalls as training goes, capped in
  length: what falls off the end was already charted.
- `{prefix}:alive:{site}`: a key each agent sets every heartbeat with a time to live of
  two heartbeats: when it lapses, the site is offline.

Redis keeps nothing the control plane cannot rebuild: jobs and commands live in SQL.
"""

from atoll.platform.bus.keys import BusKeys
from atoll.platform.bus.messages import (
    AgentStatus,
    AppliedCommand,
    Command,
    JobReport,
    StartJob,
    Telemetry,
)

__all__ = [
    "AgentStatus",
    "AppliedCommand",
    "BusKeys",
    "Command",
    "JobReport",
    "StartJob",
    "Telemetry",
]
