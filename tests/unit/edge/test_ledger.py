from atoll.edge.ledger import CommandLedger
from atoll.platform.bus.messages import AppliedCommand


def applied(command_id: str) -> AppliedCommand:
    return AppliedCommand(id=command_id, kind="drain", outcome="applied", at=1.0)


def test_a_command_seen_again_is_recognised_and_counted() -> None:
    ledger = CommandLedger()
    assert ledger.seen("c1") is None
    ledger.record(applied("c1"))
    assert ledger.seen("c1") == applied("c1")
    assert ledger.seen("c1") is not None
    assert ledger.duplicates == 2


def test_it_survives_a_restart_through_json() -> None:
    ledger = CommandLedger()
    for i in range(3):
        ledger.record(applied(f"c{i}"))
    ledger.seen("c0")
    again = CommandLedger.from_json(ledger.to_json())
    assert [a.id for a in again.recent()] == ["c0", "c1", "c2"]
    assert again.duplicates == 1
    assert again.seen("c2") is not None


def test_it_forgets_the_oldest_beyond_its_capacity() -> None:
    ledger = CommandLedger(capacity=2)
    for i in range(3):
        ledger.record(applied(f"c{i}"))
    assert ledger.seen("c0") is None
    assert ledger.seen("c2") is not None
    assert [a.id for a in ledger.recent(1)] == ["c2"]
