from atoll.edge.supervisor import after_exit


def test_a_site_that_trained_to_the_end_is_finished() -> None:
    assert after_exit(0, False, 0, 3, completed=True).verdict == "finished"


def test_a_stop_the_agent_asked_for_is_a_stop_however_it_ended() -> None:
    for code in (143, 130, 0, -9, 1):
        assert after_exit(code, True, 0, 3, completed=False).verdict == "stopped"


def test_a_crash_is_resumed_a_few_times_then_fails_with_its_reason() -> None:
    first = after_exit(1, False, 0, 2, completed=False, failure="rank 0 failed: boom")
    assert first.verdict == "restart" and "rank 0 failed: boom" in first.message
    assert after_exit(-9, False, 1, 2, completed=False).verdict == "restart"
    last = after_exit(1, False, 2, 2, completed=False)
    assert last.verdict == "failed" and "after 2 restart(s)" in last.message


def test_a_usage_error_is_not_worth_a_restart() -> None:
    decision = after_exit(2, False, 0, 3, completed=False, failure="no dataset")
    assert decision.verdict == "failed" and "no dataset" in decision.message
