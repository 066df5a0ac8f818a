"""Redis access per site: the control plane makes each enrolled site's ACL user
(platform/bus/acl.py has the rules), makes them all again in a Redis that restarted
(it keeps only their passwords' hashes), and removes a revoked site's user, which
also cuts the connections it has open."""

import hashlib
import logging
import secrets

from atoll.platform.bus.acl import site_acl, site_user
from atoll.platform.bus.connection import Bus

log = logging.getLogger("atoll.control")


def new_redis_password() -> tuple[str, str]:
    """A password for a site's Redis user, and its SHA-256 (hex), which is all we keep."""
    password = secrets.token_urlsafe(32)
    return password, hashlib.sha256(password.encode()).hexdigest()


def grant(bus: Bus, site: str, password_sha256: str) -> str:
    """Make (or remake) `site`'s user; returns its name."""
    acl = site_acl(bus.keys, site, password_sha256)
    bus.set_user(acl.user, acl.rules)
    return acl.user


def grant_all(bus: Bus, users: dict[str, str]) -> None:
    for site, password_sha256 in users.items():
        grant(bus, site, password_sha256)
    if users:
        log.info("Redis users of %d enrolled site(s) in place", len(users))


def withdraw(bus: Bus, site: str) -> None:
    bus.delete_user(site_user(bus.keys, site))
    log.warning("site %s: its Redis user is removed (revoked)", site)
