"""The control plane never opens a dataset and never loads PyTorch: it plans a job
(each site's part) from the spec and what the sites reported."""

import json
import subprocess
import sys

from atoll.platform.control.schemas_match import NOT_JOINED, schema_problems
from atoll.platform.data.schema import SCHEMAS, DataReport

PLAN = """
import json, sys
from atoll.platform.control.main import create_app
from atoll.platform.control.dispatcher import Dispatcher
from atoll.platform.control.planner import plan_job
from atoll.platform.geo.job import GeoJob

create_app()
listen = {s: ("127.0.0.1", 9400 + i) for i, s in enumerate(["virginia", "frankfurt", "singapore"])}
plan = plan_job("j", GeoJob(data="site", topology="three-continents"), listen, 60.0)
emulated = plan_job("k", GeoJob(partition="label-skew:2"), listen, 60.0)
loaded = [m for m in ("torch", "atoll.platform.data.datasets", "atoll.platform.data.readers")
          if m in sys.modules]
print(json.dumps({"loaded": loaded, "own": plan.starts["virginia"].model_dump(mode="json"),
                  "share": emulated.starts["frankfurt"].site_job["share"]}))
"""


def test_planning_a_job_loads_no_torch_and_no_dataset(tmp_path) -> None:
    env = {"ATOLL_DATA_DIR": str(tmp_path), "ATOLL_ADMIN_TOKEN": "x" * 32, "PATH": ""}
    result = subprocess.run(
        [sys.executable, "-c", PLAN], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer["loaded"] == []
    own = answer["own"]
    assert own["own_data"] is True
    assert own["site_job"]["data"] is None and own["site_job"]["share"] is None
    assert "train_indices" not in own["site_job"]
    # The emulated federation ships the seeded spec each site derives its share from.
    assert answer["share"] == {"partition": "label-skew:2", "sites": 3, "index": 1, "seed": 0}


FASHION = SCHEMAS["fashion-mnist"]
DIGITS = SCHEMAS["digits"]


def report(schema=FASHION) -> DataReport:
    return DataReport(schema=schema, samples=10, class_counts=(1,) * 10)


def test_schema_problems_name_the_sites() -> None:
    cases = [
        ({"a": report(), "b": report()}, None),
        ({"a": report(), "b": NOT_JOINED}, None),
        ({"a": report(), "b": report(DIGITS)}, "sites b hold data of another schema"),
        ({"a": None, "b": report()}, "sites a report no data"),
        ({"a": report(DIGITS), "c": report(DIGITS), "b": None}, "sites a, c hold"),
    ]
    for reports, expected in cases:
        problems = schema_problems(FASHION, reports)
        if expected is None:
            assert problems is None, reports
        else:
            assert problems is not None and expected in problems, (reports, problems)
            assert "\n" not in problems
