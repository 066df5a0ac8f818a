from atoll.edge.progress import SiteProgress


def started(step: int, t: float = 1.0) -> dict:
    return {"kind": "started", "time": t, "step": step, "total_steps": 100, "params": 10}


def geo(rank: int, shard: int, sent: int, stall: float) -> dict:
    return {"kind": "geo", "time": 2.0, "rank": rank, "shard": shard, "bytes_sent": sent,
            "stall_s": stall, "links": {}}  # fmt: skip


def test_a_run_log_replays_to_the_same_progress() -> None:
    events = [
        {"kind": "rank_started", "rank": 0, "time": 0.5, "pid": 1},
        started(0),
        {"kind": "step", "time": 1.1, "step": 1, "loss": 2.3, "epoch": 0},
        {"kind": "eval", "time": 1.2, "step": 1, "test_accuracy": 0.3, "test_loss": 2.0},
        geo(0, 0, 1000, 0.5),
        {"kind": "finished", "time": 3.0, "step": 100, "stopped": False, "test_accuracy": 0.9},
    ]
    progress = SiteProgress()
    kinds = [progress.apply(e) for e in events]
    assert kinds == [None, None, "step", "eval", "geo", "end"]
    assert progress.clock == 100 and progress.total_clocks == 100
    assert progress.final_accuracy == progress.accuracy == 0.9 and progress.completed
    assert progress.wan_bytes == 1000 and progress.stall_s == 0.5
    assert progress.started_at == 1.0 and progress.finished_at == 3.0


def test_counters_of_each_incarnation_add_up() -> None:
    progress = SiteProgress()
    for event in [started(0), geo(0, 0, 500, 1.0), geo(0, 1, 700, 2.0), started(40, 9.0),
                  geo(0, 0, 100, 0.5)]:  # fmt: skip
        progress.apply(event)
    assert progress.incarnation == 2 and progress.clock == 40
    assert progress.wan_bytes == 500 + 700 + 100
    assert progress.stall_s == 2.0 + 0.5  # each incarnation's slowest shard
    assert progress.started_at == 1.0  # the first start


def test_a_stop_is_not_a_completion_and_a_failure_is_remembered_until_restarted() -> None:
    progress = SiteProgress()
    progress.apply(started(0))
    progress.apply({"kind": "finished", "time": 2.0, "step": 30, "stopped": True,
                    "test_accuracy": None})  # fmt: skip
    assert not progress.completed and progress.final_accuracy is None and progress.clock == 30
    progress.apply({"kind": "failed", "time": 3.0, "message": "rank 1 died"})
    assert progress.failure == "rank 1 died"
    progress.apply(started(30))
    assert progress.failure is None
