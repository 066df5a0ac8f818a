"""Each site's Redis ACL user, as rules: what an agent with its credentials may touch.

Pure (no Redis here): `platform/control/access.py` sends these with ACL SETUSER when a
site enrols and removes the user (ACL DELUSER) when it is revoked. An agent may read
and acknowledge only its own command stream (through its consumer group), set only
its own liveness key, append to its own status and telemetry streams (which it may not
read), and read the revocation list. Nothing else: no other key, no pub/sub channel, no
admin command.
"""

from dataclasses import dataclass

from atoll.platform.bus.keys import BusKeys

# What the agent's bus calls need, and nothing more.
_COMMANDS = (
    "+ping",
    "+hello",
    "+auth",
    "+client|setname",
    "+info",  # its run_id tells a restarted Redis
    "+select",  # the database in its URL; the key patterns hold in every one
    "+xreadgroup",
    "+xack",
    "+xgroup|create",  # a restarted Redis forgot the group
    "+set",
    "+mget",  # its own liveness key (deploy/healthcheck.py)
    "+get",  # the revocation list
    "+xadd",
)


def site_user(keys: BusKeys, site: str) -> str:
    """The Redis user name of a site's agent (one namespace per deployment prefix)."""
    return f"{keys.prefix}-site-{site}"


@dataclass(frozen=True)
class SiteAcl:
    user: str
    rules: tuple[str, ...]


def site_acl(keys: BusKeys, site: str, password_sha256: str) -> SiteAcl:
    """The ACL SETUSER rules for `site`, whose password has this SHA-256 (hex): the control
    plane keeps only that, and can make the user again in a Redis that restarted."""
    return SiteAcl(
        site_user(keys, site),
        (
            "reset",  # forget every earlier rule and password of this user
            "on",
            f"#{password_sha256}",
            "-@all",
            *_COMMANDS,
            f"%RW~{keys.commands(site)}",
            f"%RW~{keys.alive(site)}",  # read: the container healthcheck
            f"%W~{keys.status(site)}",
            f"%W~{keys.telemetry(site)}",
            f"%R~{keys.crl}",
            "resetchannels",
        ),
    )
