import pytest

from atoll.platform.site.supervise import Decision, SiteExit, after_exit

DONE = SiteExit(0, completed=True)


def decide(
    ended: SiteExit, stop_sent: bool = False, wanted: bool = False, failures: int = 0
) -> Decision:
    return after_exit(ended, stop_sent=stop_sent, wanted=wanted, failures=failures, max_restarts=2)


@pytest.mark.parametrize(
    ("ended", "stop_sent", "wanted", "failures", "verdict"),
    [
        (DONE, False, False, 0, "finished"),
        (DONE, True, False, 0, "finished"),  # it was done before the stop arrived
        (SiteExit(143, False), True, False, 0, "stopped"),
        (SiteExit(130, False), True, False, 0, "stopped"),
        (SiteExit(-9, False), True, False, 2, "stopped"),  # killed after a stop: a stop
        (SiteExit(1, False), True, False, 2, "stopped"),
        (SiteExit(143, False), True, True, 0, "resume"),  # wanted again while stopping
        (SiteExit(143, False), True, True, 2, "resume"),  # a resume is no failure
        (SiteExit(0, False), False, False, 0, "restart"),  # exited without finishing
        (SiteExit(1, False), False, False, 0, "restart"),
        (SiteExit(-9, False), False, False, 1, "restart"),
        (SiteExit(1, False), False, False, 2, "failed"),  # the restart budget is spent
        (SiteExit(2, False), False, False, 0, "failed"),  # a usage error: no restart helps
    ],
)
def test_what_a_site_exit_means(
    ended: SiteExit, stop_sent: bool, wanted: bool, failures: int, verdict: str
) -> None:
    assert decide(ended, stop_sent, wanted, failures).verdict == verdict


def test_a_failure_says_how_and_why_and_after_how_many_restarts() -> None:
    first = decide(SiteExit(1, False, "rank 0 failed: boom"))
    assert first.message == "exited with code 1: rank 0 failed: boom"
    assert decide(SiteExit(-9, False)).message == "killed by SIGKILL"
    last = decide(SiteExit(1, False), failures=2)
    assert last.message == "exited with code 1 (after 2 restart(s))"
    usage = decide(SiteExit(2, False, "no dataset"))
    assert usage.message == "exited with code 2: no dataset"
