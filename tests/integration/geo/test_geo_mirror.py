"""A shard's geo mirror over a real endpoint on loopback, with its peer absent: a site that
rejoins waits for a mirror's replica, and a stop ends that wait (a site cancelled once the
others finished without it must not sit out the whole sync timeout)."""

import secrets
import time
from pathlib import Path

import pytest
import torch

from atoll.platform.geo.spec import GeoSpec
from atoll.platform.site.geo_mirror import GeoMirror, GeoStalled
from atoll.platform.site.plan import loopback_endpoints
from atoll.platform.site.spec import SiteGeo

pytestmark = pytest.mark.integration


def lone_mirror(tmp_path: Path, sync_timeout_s: float) -> GeoMirror:
    secret = tmp_path / "secret"
    secret.write_text(secrets.token_hex(16))
    config = SiteGeo(
        site="a",
        sites=("a", "b"),
        policy=GeoSpec(policy="asp"),
        endpoints=loopback_endpoints(("a", "b"), 1, tls=False),  # nobody listens as b
        links={"b": (0.0, 1e9)},
        secret_file=secret,
        sync_timeout_s=sync_timeout_s,
    )
    return GeoMirror(config, 0, 1, torch.zeros(8), 0)


def test_a_stop_ends_a_rejoining_sites_wait_for_its_mirrors(tmp_path: Path) -> None:
    mirror = lone_mirror(tmp_path, sync_timeout_s=300)
    try:
        mirror.start(rejoin=True)
        asked = time.monotonic()
        assert mirror.sync(stopping=lambda: time.monotonic() - asked > 0.5) is False
        assert time.monotonic() - asked < 5
    finally:
        mirror.close()  # the rejoin request stays unacknowledged: noted, not raised


def test_without_a_stop_the_wait_ends_at_the_sync_timeout_saying_why(tmp_path: Path) -> None:
    mirror = lone_mirror(tmp_path, sync_timeout_s=1.0)
    try:
        mirror.start(rejoin=True)
        with pytest.raises(GeoStalled, match="snapshot: waited 1 s"):
            mirror.sync()
    finally:
        mirror.close()  # the rejoin request stays unacknowledged: noted, not raised
