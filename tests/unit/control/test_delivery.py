from atoll.platform.control.delivery import Delivery, DeliveryPolicy

POLICY = DeliveryPolicy(retry_s=60)


def test_a_new_command_is_published() -> None:
    assert POLICY.due(Delivery("issued", None, None), "epoch-1", 0.0, None)


def test_a_published_command_waits_for_its_agent() -> None:
    sent = Delivery("issued", "epoch-1", 100.0)
    assert not POLICY.due(sent, "epoch-1", 120.0, True)
    assert not POLICY.due(sent, "epoch-1", 500.0, False)  # offline: its stream keeps it


def test_a_restarted_redis_gets_every_open_command_again() -> None:
    assert POLICY.due(Delivery("issued", "epoch-1", 100.0), "epoch-2", 101.0, None)


def test_an_online_site_that_does_not_apply_it_gets_it_again_after_the_retry_time() -> None:
    assert POLICY.due(Delivery("issued", "epoch-1", 100.0), "epoch-1", 160.0, True)


def test_settled_commands_are_never_published_again() -> None:
    for state in ("applied", "refused", "ignored", "superseded"):
        assert not POLICY.due(Delivery(state, None, None), "epoch-2", 1e9, True)
