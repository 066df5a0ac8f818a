"""The dashboard's site page shows the site's device tier: its SuperLink and each round."""

from datetime import UTC, datetime
from types import SimpleNamespace

from atoll.platform.bus.messages import DeviceRound, DeviceTierReport
from atoll.platform.control.schemas import SiteOut
from atoll.web.api.deps import TEMPLATES


def render(devices: DeviceTierReport | None) -> str:
    now = datetime.now(UTC)
    site = SiteOut(
        name="v", state="active", online=True, agent_state="idle", region="r", registry_id=None,
        geo_endpoint=None, geo_ports=1, job=None, version="1", duplicates=0, joined=True,
        devices=devices, first_seen_at=now, last_seen_at=now,
    )  # fmt: skip
    fetched = SimpleNamespace(value=site, stale=False)
    return TEMPLATES.env.get_template("site.html").render(
        name="v", site=fetched, registered=SimpleNamespace(value=None, stale=False),
        may_write=False, now=now, job=None, part=None,
    )  # fmt: skip


def test_the_site_page_lists_device_rounds_newest_first() -> None:
    rounds = [
        DeviceRound(
            round=r,
            time=1e9 + r,
            devices=3,
            replied=3 - r,
            refused=r - 1,
            dropped=1,
            examples=450,
            seconds=12.5,
            accuracy=0.614,
        )
        for r in (1, 2)
    ]
    html = render(DeviceTierReport(superlink="site:9092", up=False, restarts=2, rounds=rounds))
    devices = html[html.index('id="devices-title"') :]
    assert "site:9092" in devices and "offline" in devices and "started again 2 times" in devices
    rows = devices.split("<tr>")[2:]  # after the header
    assert [row.split("</td>")[0].rsplit(">", 1)[1] for row in rows] == ["2", "1"]
    assert "61.4 %" in rows[0] and "450" in rows[0] and "12.5 s" in rows[0]


def test_a_site_without_devices_has_no_devices_section() -> None:
    assert 'id="devices-title"' not in render(None)
