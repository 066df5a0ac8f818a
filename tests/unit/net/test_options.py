import pytest

from atoll.platform.net.errors import LinkError
from atoll.platform.net.options import LinkOptions


def test_the_heartbeat_defaults_to_a_quarter_of_the_lease() -> None:
    assert LinkOptions(lease_s=8.0).heartbeat_interval_s == 2.0
    assert LinkOptions(lease_s=8.0, heartbeat_s=1.0).heartbeat_interval_s == 1.0


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"queue_bytes": 1000, "max_message_bytes": 1000}, "queue_bytes must hold"),
        ({"max_message_bytes": 0}, "max_message_bytes must be positive"),
        ({"inbox_bytes": 0}, "inbox_bytes"),
        ({"lease_s": 1.0, "heartbeat_s": 1.0}, "shorter than the lease"),
        ({"ack_delay_s": 0}, "must be positive"),
        ({"ack_every_messages": 0}, "ack thresholds"),
        ({"backoff_initial_s": 2.0, "backoff_max_s": 1.0}, "backoff"),
        ({"probe_timeout_s": 5.0, "handshake_timeout_s": 5.0}, "fit in the handshake timeout"),
    ],
)
def test_options_that_cannot_work_are_refused(changes: dict, problem: str) -> None:
    with pytest.raises(LinkError, match=problem):
        LinkOptions(**changes)
