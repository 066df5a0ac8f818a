"""A device site on real Flower: its SuperLink, three SuperNodes running the example's
stock ClientApp, Atoll's ServerApp, and the site's updates crossing a real WAN link
(loopback) to a second site through the geo tier."""

import secrets
import threading
from pathlib import Path

import numpy as np
import pytest
from devices_support import EXAMPLE, MODEL, local_devices, start_supernodes

from atoll.platform.core.events import RunEvent
from atoll.platform.devices.flower import SuperLinkOptions
from atoll.platform.devices.launch import FlowerSite, stop_process
from atoll.platform.devices.site import DeviceSite, initial_arrays
from atoll.platform.devices.spec import DeviceSiteSpec
from atoll.platform.geo.spec import GeoSpec
from atoll.platform.net.ports import free_loopback_port
from atoll.platform.site.plan import loopback_endpoints
from atoll.platform.site.spec import SiteGeo

pytestmark = [pytest.mark.integration, pytest.mark.flower, pytest.mark.timeout(600)]

DEVICES = 3  # SuperNodes; the peer site plays one more device in process
SMALL = {"max-train-samples": 200, "max-test-samples": 100}


def geo(site: str, endpoints: dict[str, tuple[str, ...]], secret: Path) -> SiteGeo:
    peer = next(n for n in endpoints if n != site)
    return SiteGeo(
        site=site,
        sites=tuple(endpoints),
        policy=GeoSpec(policy="bsp"),
        endpoints=endpoints,
        links={peer: (0.0, 1e9)},
        secret_file=secret,
        sync_timeout_s=240,
    )


def test_stock_client_app_trains_in_a_site_whose_updates_cross_the_wan(
    fashion_mnist: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "secret"
    secret.write_text(secrets.token_hex(16))
    endpoints = loopback_endpoints(("devices", "peer"), 1, tls=False)
    rounds = 2
    spec = DeviceSiteSpec(
        model=MODEL,
        rounds=rounds,
        min_replies=DEVICES,
        poll_s=0.5,
        round_timeout_s=240,
        out_dir=tmp_path / "devices-site",
        geo=geo("devices", endpoints, secret),
    )
    site = FlowerSite(spec, EXAMPLE, SuperLinkOptions(free_loopback_port()), tmp_path / "flower")
    nodes = []
    peer_events: list[RunEvent] = []
    peer_final: dict[str, np.ndarray] = {}
    try:
        site.start_superlink()
        nodes = start_supernodes(site.superlink.address, DEVICES, DEVICES + 1, tmp_path)
        site.start_run({"data-dir": str(fashion_mnist), **SMALL})

        # The peer: a site with one device of its own, in this process, same rounds.
        peer_spec = spec.model_copy(
            update={
                "min_replies": 1,
                "out_dir": tmp_path / "peer",
                "geo": geo("peer", endpoints, secret),
            }
        )
        grid = local_devices(fashion_mnist, [DEVICES], DEVICES + 1, **SMALL)
        peer = DeviceSite(peer_spec, grid, initial_arrays(MODEL, 0), peer_events.append)
        thread = threading.Thread(target=lambda: peer_final.update(peer.run()), daemon=True)
        thread.start()

        site.wait(timeout_s=480)
        thread.join(60)
    finally:
        for node in nodes:
            stop_process(node)
        site.stop()

    done = site.rounds_done()
    assert [d.round for d in done] == [1, 2]
    assert all(d.devices == DEVICES and d.replied == DEVICES and not d.refused for d in done)
    assert all(d.device_accuracy is not None and 0.0 < d.device_accuracy <= 1.0 for d in done)
    assert done[-1].wan_bytes > 0  # the site's updates crossed the WAN link
    # BSP across the two sites: both end with the same parameters.
    final = dict(np.load(spec.out_dir / "model.npz"))
    assert peer_final, "the peer site did not finish"
    for name, value in peer_final.items():
        np.testing.assert_allclose(final[name], value, rtol=0, atol=1e-6)
    # ...which differ from where they started: the devices trained.
    start = initial_arrays(MODEL, 0)
    assert any(not np.allclose(final[k], start[k]) for k in start)
