"""The run events as the logs hold them: what older runs wrote still reads, and every
geo policy's counters have a field."""

from typing import get_args

import pytest
import torch

from atoll.platform.core.events import (
    GeoStats,
    MalformedEvent,
    SiteLaunched,
    StepDone,
    TrainingFinished,
    of_kind,
    parse_event,
)
from atoll.platform.geo.policies import build_policy
from atoll.platform.geo.spec import GeoSpec, PolicyName

# Lines as the writers before typed events wrote them.
OLD_LINES = [
    ('{"kind":"step","time":1.5,"step":3,"loss":2.25,"epoch":0}', StepDone),
    ('{"time":9.0,"kind":"site_started","site":"tokyo","pid":42,"resume":false}', SiteLaunched),
    (
        '{"kind":"finished","time":3.0,"step":30,"stopped":true,"train_s":1.0,"steady_steps":20,'
        '"steady_step_s":null,"test_accuracy":null,"test_loss":null}',
        TrainingFinished,
    ),
    (
        '{"kind":"geo","rank":0,"shard":1,"time":2.0,"policy":"asp","clock":10,"stall_s":0.5,'
        '"threshold":0.01,"sent_elements":5,"applied_elements":7,"pending_accumulator_l1":0.1,'
        '"lookaheads":0,"mean_undelivered_mirror_clocks":0.0,"links":{"a->b":100},'
        '"bytes_sent":100,"reconnects":0,"decode_errors":0,"protocol_errors":0,'
        '"last_protocol_error":null,"unacknowledged_at_close":null}',
        GeoStats,
    ),
]


@pytest.mark.parametrize(("line", "kind"), OLD_LINES)
def test_a_line_an_older_run_wrote_reads_as_its_event(line: str, kind: type) -> None:
    event = parse_event(line)
    assert isinstance(event, kind)
    assert parse_event(event.model_dump_json()) == event


def test_fields_a_newer_atoll_adds_are_ignored() -> None:
    event = parse_event('{"kind":"step","time":1.0,"step":1,"loss":2.0,"epoch":0,"gpu":"x"}')
    assert event == StepDone(time=1.0, step=1, loss=2.0, epoch=0)


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ('{"kind":"teleported","time":1.0}', "does not match any of the expected tags"),
        ('{"time":1.0,"step":1}', "Unable to extract tag using discriminator 'kind'"),
        ('{"kind":"step","time":1.0,"step":"three","loss":2.0,"epoch":0}', "step: Input should"),
        ('{"kind":"step","time":1.0,"step":1,"loss"', "line: Invalid JSON"),
        ('["step"]', "line: Input should be an object"),
    ],
)
def test_a_line_that_is_no_known_event_is_an_error_that_says_why(line: str, problem: str) -> None:
    with pytest.raises(MalformedEvent, match=problem):
        parse_event(line)


def test_counters_a_policy_does_not_keep_are_left_out_of_the_line() -> None:
    event = GeoStats(time=1.0, rank=0, shard=0, policy="fedavg", clock=3, stall_s=0.0,
                     bytes_sent=10, links={}, rounds=2)  # fmt: skip
    line = event.model_dump_json()
    assert '"rounds":2' in line
    assert "threshold" not in line
    assert "lookaheads" not in line


@pytest.mark.parametrize("policy", get_args(PolicyName))
def test_every_counter_of_every_geo_policy_has_a_field(policy: str) -> None:
    stats = build_policy(GeoSpec(policy=policy), 0, 2, torch.zeros(4)).stats()  # type: ignore[arg-type]
    assert set(stats) <= set(GeoStats.model_fields)


def test_of_kind_picks_one_kind_in_order() -> None:
    events = [parse_event(line) for line, _ in OLD_LINES]
    assert [e.step for e in of_kind(events, StepDone)] == [3]
    assert of_kind(events, SiteLaunched)[0].site == "tokyo"
