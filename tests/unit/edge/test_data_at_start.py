"""An agent reads its site's data when it starts: bad data stops it with one line naming
the file and the problem, before it joins anything; good data is reported (no sample)."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import yaml
from integration.control.harness import enrol_offline

from atoll.edge.agent import EdgeAgent
from atoll.edge.config import load_edge_settings


def site_file(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / "site.yaml"
    config = {"name": "x", "state_dir": str(tmp_path / "state"), "data": data}
    path.write_text(yaml.safe_dump(config))
    return path


def test_bad_data_stops_the_agent_with_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "d.npz"
    np.savez(bad, x=np.zeros((3, 8, 8), np.uint8), y=np.array([0, 1, 12]))
    config = site_file(tmp_path, {"format": "npz", "path": str(bad), "schema": "digits"})
    result = subprocess.run(
        [sys.executable, "-m", "atoll.edge", "run", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert lines == [f"atoll: error: {bad}: label 12 is outside the schema's 10 classes (0..9)"]


def test_the_agent_reports_what_its_data_is(tmp_path: Path) -> None:
    good = tmp_path / "d.npz"
    x = np.zeros((4, 8, 8), np.uint8)
    np.savez(good, x=x, y=np.array([0, 1, 1, 9]), x_test=x[:1], y_test=np.array([3]))
    config = site_file(tmp_path, {"format": "npz", "path": str(good), "schema": "digits"})
    enrol_offline(tmp_path / "ca", tmp_path / "state", "x")  # it has its certificate
    agent = EdgeAgent(load_edge_settings(config))
    try:
        assert agent.data is not None
        assert (agent.data.samples, agent.data.test_samples) == (4, 1)
        assert agent.data.class_counts == (1, 2, 0, 0, 0, 0, 0, 0, 0, 1)
        assert agent.core.limits.has_data
    finally:
        agent.bus.close()
