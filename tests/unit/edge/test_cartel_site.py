"""A cartel site's handling of what its neighbours send, on a real model and real messages
(digits, logistic regression); its links are made but never started."""

from pathlib import Path

import numpy as np
import pytest

from atoll.edge.cartel.site import CartelSiteRun, Fetch
from atoll.platform.core.events import CartelNoted, CartelTransferred
from atoll.platform.core.runlog import RunLog, read_events
from atoll.platform.transfer.core import BatchScored, NeighboursRanked
from atoll.platform.transfer.job import CartelJob, CartelSiteJob
from atoll.platform.transfer.messages import (
    PartAnswer,
    PartDeclined,
    PartRequest,
    decode,
    encode,
)
from atoll.platform.transfer.neighbours import SiteReport
from atoll.platform.transfer.parts import ModelPart


@pytest.fixture
def run(tmp_path: Path) -> CartelSiteRun:
    secret = tmp_path / "secret"
    secret.write_text("s" * 32)
    job = CartelSiteJob(
        job_name="j",
        site="bravo",
        job=CartelJob(sites=("alpha", "bravo", "charlie")),
        endpoints={
            s: f"ws://127.0.0.1:{9000 + i}" for i, s in enumerate(("alpha", "bravo", "charlie"))
        },
        secret_file=secret,
    )
    site = CartelSiteRun(job, tmp_path / "run")
    site.runlog = RunLog(tmp_path / "run" / "log.jsonl")
    return site


def asking_alpha(site: CartelSiteRun) -> int:
    """Drive the core into fetching from alpha; returns the request's id."""
    site.core.phase, site.core.drifted = "asking", (0,)
    sent: list[tuple[str, bytes]] = []
    site.endpoint.send = lambda peer, payload, timeout=None: sent.append((peer, payload))  # type: ignore[method-assign]
    report = SiteReport("alpha", 0.0, (), 0.9, (), (), 10, site.model.signature, 0, False)
    site._feed(NeighboursRanked([report]))
    assert site.fetch is not None and sent[0][0] == "alpha"
    request = decode(sent[0][1])
    assert isinstance(request, PartRequest) and 0 in request.classes
    return request.id


def alpha_part(site: CartelSiteRun, **changes: object) -> ModelPart:
    fields: dict[str, object] = {
        "source": "alpha",
        "source_version": 7,
        "signature": site.model.signature,
        "kind": "rows",
        "classes": (0,),
        "arrays": {
            "linear.weight": np.full((1, site.model.shapes()["linear.weight"][1]), 0.5, np.float32),
            "linear.bias": np.zeros(1, np.float32),
        },
        "row_arrays": frozenset({"linear.weight", "linear.bias"}),
        "class_samples": (50,),
        "samples": 100,
    }
    return ModelPart(**{**fields, **changes})  # type: ignore[arg-type]


def logged(site: CartelSiteRun) -> list[object]:
    site.runlog.close()
    return read_events(site.runlog.path)


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"signature": "logreg:other"}, "signature logreg:other is not this model's"),
        ({"arrays": {"linear.weight": np.ones((1, 5), np.float32)}}, "has shape (1, 5)"),
        ({"arrays": {"linear.bias": np.array([np.inf], np.float32)}}, "holds NaN or infinity"),
        ({"arrays": {"linear.bias": np.array([np.nan], np.float32)}}, "holds NaN or infinity"),
        ({"source": "charlie"}, "the part says it is charlie's"),
    ],
)
def test_a_bad_part_is_refused_with_a_log_line_and_the_model_kept(
    run: CartelSiteRun, changes: dict[str, object], reason: str
) -> None:
    request_id = asking_alpha(run)
    before = run.model.arrays()
    run._message("alpha", encode(PartAnswer(request_id, alpha_part(run, **changes))))
    for name, array in run.model.arrays().items():
        np.testing.assert_array_equal(array, before[name])
    refused = [e for e in logged(run) if isinstance(e, CartelNoted) and e.happening == "refused"]
    assert refused and reason in refused[0].message and "kept the model" in refused[0].message
    assert run.fetch is None and run.core.phase == "training"  # no neighbour left: alone


def test_a_good_part_is_merged_and_logged_as_a_transfer(run: CartelSiteRun) -> None:
    request_id = asking_alpha(run)
    before = run.model.arrays()["linear.weight"]
    run._message("alpha", encode(PartAnswer(request_id, alpha_part(run))))
    after = run.model.arrays()["linear.weight"]
    assert not np.array_equal(after[0], before[0]) and np.array_equal(after[1:], before[1:])
    (transfer,) = [e for e in logged(run) if isinstance(e, CartelTransferred)]
    assert (transfer.source, transfer.classes, transfer.part) == ("alpha", [0], "rows")
    assert transfer.bytes > 0


def test_a_late_answer_or_a_stranger_part_changes_nothing(run: CartelSiteRun) -> None:
    request_id = asking_alpha(run)
    before = run.model.arrays()
    run._message("alpha", encode(PartAnswer(request_id - 1, alpha_part(run))))  # an older request
    run._message("charlie", encode(PartAnswer(request_id, alpha_part(run, source="charlie"))))
    for name, array in run.model.arrays().items():
        np.testing.assert_array_equal(array, before[name])
    assert run.fetch is not None  # still waiting for alpha's answer


def test_a_decline_or_silence_moves_on(run: CartelSiteRun) -> None:
    request_id = asking_alpha(run)
    run._message("alpha", encode(PartDeclined(id=request_id, reason="not good")))
    assert run.fetch is None and run.core.phase == "training"
    asking_alpha(run)
    assert run.fetch is not None
    run.fetch = Fetch(run.fetch.id, "alpha", deadline=0.0)
    run._check_fetch_deadline()
    failed = [
        e for e in logged(run) if isinstance(e, CartelNoted) and e.happening == "fetch-failed"
    ]
    assert ["declined: not good" in f.message for f in failed] == [True, False]
    assert "no answer in" in failed[1].message


def test_a_site_serves_rows_only_of_classes_it_is_good_at(run: CartelSiteRun) -> None:
    sent: list[bytes] = []
    run.endpoint.send = lambda peer, payload, timeout=None: sent.append(payload)  # type: ignore[method-assign]
    for i in range(40):  # class-emergence stream 1 of 3: classes 2..5
        x, y = run.sampler.batch(i, 10)
        run._feed(BatchScored(float(i), y.tolist(), run.model.score_then_train(x, y).tolist()))
    ask = PartRequest(
        id=1, signature=run.model.signature, classes=(2, 3), drifted=(2,), min_accuracy=0.0
    )
    run._message("alpha", encode(ask))
    never_seen = ask.model_copy(update={"id": 2, "drifted": (9,)})
    run._message("alpha", encode(never_seen))
    answers = [decode(p) for p in sent]
    assert answers[0].part.classes == (2, 3)  # type: ignore[union-attr]
    assert isinstance(answers[1], PartDeclined) and "not good" in answers[1].reason
