"""Must show (issue 12): a job through the control plane on each site's own data folder,
with the control plane's machine holding no dataset (its ATOLL_DATA_DIR is an empty
folder) and never loading PyTorch, ends with the accuracy of the emulated split: the
folders are what `atoll data split` writes, the emulated sites derive the same shares."""

from collections.abc import Iterator
from pathlib import Path

import pytest
from integration.control.harness import (
    SITES,
    control_database,
    job_end,
    shared_redis_url,
    wait_for,
)

from atoll.localstack.deployment import AgentSpec, LocalDeployment
from atoll.platform.control.client import ControlClient, ControlError
from atoll.platform.data.schema import SCHEMAS, DataReport
from atoll.platform.data.split import split_to_folders

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1800)]
PARTITION = "dirichlet:0.5"
# BSP between sites: every clock every replica is the same, so the two runs must agree.
JOB = {
    "dataset": "fashion-mnist",
    "model": "mlp",
    "topology": "three-continents",
    "partition": PARTITION,
    "batch_size": 32,
    "clocks": 60,
    "eval_every": 30,
    "eval_samples": 500,
    "seed": 0,
    "geo": {"policy": "bsp"},
}
JOB_S = 600


@pytest.fixture
def stack(tmp_path: Path, fashion_mnist: Path) -> Iterator[LocalDeployment]:
    folders = split_to_folders(
        "fashion-mnist", fashion_mnist, tuple(SITES), PARTITION, 0, tmp_path / "data"
    )
    empty = tmp_path / "control-data"
    empty.mkdir()
    with control_database(tmp_path) as database_url:
        deployment = LocalDeployment(
            tmp_path / "stack",
            [AgentSpec(name, region, data=folders[name]) for name, region in SITES.items()],
            redis_url=shared_redis_url(),
            control_database_url=database_url,
            heartbeat_s=0.5,
            control_env={"ATOLL_DATA_DIR": str(empty)},
            with_web=False,
        )
        with deployment:
            yield deployment


def test_a_job_on_each_sites_own_folder_matches_the_emulated_split(
    stack: LocalDeployment,
) -> None:
    with ControlClient(stack.control_url, stack.admin_token, retries=10) as client:
        # Each site reported its own data; the control plane only keeps the report.
        # (The agents enrol, then report: wait until each has.)
        def reported() -> dict[str, DataReport | None]:
            found = {s.name: s.data for s in client.sites().sites}
            return found if len(found) == len(SITES) and all(found.values()) else {}

        reports = wait_for("every site's data report", reported, 120)
        assert all(r is not None and r.data_schema == SCHEMAS["fashion-mnist"]
                   for r in reports.values()), reports  # fmt: skip
        assert sum(r.samples for r in reports.values() if r) == 60_000

        # A job whose schema the sites' data does not have is refused, naming them.
        with pytest.raises(ControlError) as refused:
            client.submit({**JOB, "data": "site", "data_schema": SCHEMAS["digits"].model_dump()})
        assert "frankfurt, singapore, virginia hold data of another schema" in str(refused.value)

        own = job_end(client, client.submit({**JOB, "data": "site"}).id, JOB_S)
        emulated = job_end(client, client.submit(JOB).id, JOB_S)

    for job in (own, emulated):
        assert job.state == "completed", job.message
        assert job.params is not None and job.bsp_wan_bytes  # as the sites reported
    samples = {s.site: s.samples for s in own.sites}
    assert samples == {name: r.samples for name, r in reports.items() if r}
    assert samples == {s.site: s.samples for s in emulated.sites}
    own_accuracy = {s.site: s.final_accuracy for s in own.sites}
    emulated_accuracy = {s.site: s.final_accuracy for s in emulated.sites}
    print(f"own folders: {own_accuracy}; emulated split: {emulated_accuracy}")
    assert own_accuracy == emulated_accuracy
    assert all(a is not None and a > 0.5 for a in own_accuracy.values())

    # The control plane ran without a dataset and without PyTorch.
    assert stack.control is not None and stack.control.pid is not None
    maps = Path(f"/proc/{stack.control.pid}/maps").read_text()
    assert "libtorch" not in maps
