"""One job file for `atoll train`, `atoll sim` and `atoll control submit`, with the options
the user gave on top of it; the spec's defaults for the rest."""

from pathlib import Path

import pytest
from support import REPO_ROOT
from support import atoll_in_process as atoll

from atoll.cli import options as o
from atoll.cli.jobfile import resolve_job, resolve_submission
from atoll.platform.core.errors import AtollError
from atoll.platform.geo.job import GeoJob
from atoll.platform.transfer.job import CartelJob

EXAMPLES = sorted((REPO_ROOT / "examples" / "jobs").glob("*.yaml"))


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "job.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_every_example_job_file_is_a_valid_job(example: Path) -> None:
    job = resolve_submission(example, {})
    if isinstance(job, CartelJob):
        assert len(job.sites) >= 2
        return
    assert len(job.topologies()[0].sites) >= 2
    job.partition_spec()


def test_a_cartel_job_file_takes_no_geo_options(tmp_path: Path) -> None:
    path = write(tmp_path, "kind: cartel\nsites: [a, b]\n")
    assert resolve_submission(path, {}) == CartelJob(sites=("a", "b"))
    with pytest.raises(AtollError, match=r"a cartel job: the job options \(clocks\) are a geo"):
        resolve_submission(path, o.overrides({"clocks": 5}))
    bad = write(tmp_path, "kind: cartel\nsites: [a]\n")
    with pytest.raises(AtollError, match="sites: Tuple should have at least 2 items"):
        resolve_submission(bad, {})


def test_there_are_example_job_files() -> None:
    assert len(EXAMPLES) >= 3


def test_without_a_file_or_options_the_job_is_the_specs_defaults() -> None:
    assert resolve_job(None, {}) == GeoJob()


def test_an_option_overrides_its_field_and_leaves_the_files_others(tmp_path: Path) -> None:
    path = write(tmp_path, "clocks: 50\ngeo: {policy: asp, threshold: 0.05, staleness: 0}\n")
    job = resolve_job(path, o.overrides({"threshold": 0.02, "batch_size": 8}))
    assert job.geo.threshold == 0.02
    assert job.geo.staleness == 0
    assert job.clocks == 50
    assert job.batch_size == 8


def test_options_not_given_change_nothing() -> None:
    assert o.overrides({"threshold": None, "geo": None, "clocks": None}) == {}


def test_options_nest_as_the_specs_fields() -> None:
    nested = o.overrides({"lr": 0.1, "optimizer": "adam", "values": "int8", "seed": 3})
    assert nested == {
        "optimizer": {"lr": 0.1, "name": "adam"},
        "geo": {"value_type": "int8"},
        "seed": 3,
    }


def test_every_option_names_a_field_of_the_spec() -> None:
    for name, option in o.JOB_OPTIONS.items():
        assert o.spec_default(option.spec_field), name


def test_adam_without_a_learning_rate_gets_adams_default(tmp_path: Path) -> None:
    assert resolve_job(write(tmp_path, "optimizer: {name: adam}\n"), {}).optimizer.lr == 0.001
    assert resolve_job(None, o.overrides({"optimizer": "adam"})).optimizer.lr == 0.001


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("clocks: -3\n", "clocks"),
        ("geo: {policy: gossip}\n", "geo.policy"),
        ("geo: {threshhold: 0.1}\n", "geo.threshhold"),
        ("dataset: imagenet\n", "dataset"),
        ("optimizer: {lr: 0}\n", "optimizer.lr"),
    ],
)
def test_a_bad_field_is_named_with_the_file(tmp_path: Path, text: str, field: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(AtollError) as raised:
        resolve_job(path, {})
    assert str(raised.value).startswith(f"{path}: {field}: ")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("clocks: [1\n", "is neither YAML nor JSON"),
        ("- asp\n- bsp\n", "a job file is a mapping of fields, not list"),
    ],
)
def test_a_file_that_is_no_mapping_is_named(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(AtollError, match=message):
        resolve_job(path, {})


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(AtollError, match="no job file"):
        resolve_job(tmp_path / "nowhere.yaml", {})


def test_the_cli_reports_a_bad_job_file_in_one_line(tmp_path: Path) -> None:
    path = write(tmp_path, "geo: {staleness: -1}\n")
    result = atoll("sim", "--job", str(path), "--out", str(tmp_path / "run"))
    assert result.returncode == 2
    assert result.stderr.strip() == (
        f"atoll: error: {path}: geo.staleness: Input should be greater than or equal to 0"
    )
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--threshold", "0.1"], "--threshold applies to a geo job"),
        (["--topology", "lan", "--tls"], "--topology, --tls applies to a geo job"),
        (["--sites", "3", "--epochs", "2"], "--epochs applies to one site"),
        (["--sites", "3", "--resume"], "--resume applies to one site"),
    ],
)
def test_train_refuses_options_of_the_other_mode(
    tmp_path: Path, args: list[str], message: str
) -> None:
    result = atoll("train", "--dataset", "digits", "--out", str(tmp_path / "run"), *args)
    assert result.returncode == 2
    assert message in result.stderr
    assert not (tmp_path / "run").exists()


def test_train_refuses_a_geo_job_of_one_site(tmp_path: Path) -> None:
    path = write(tmp_path, "topology: three-continents\nsites: 1\n")
    result = atoll("train", "--job", str(path), "--out", str(tmp_path / "run"))
    assert result.returncode == 2
    assert "a geo job needs at least 2 sites" in result.stderr
