import json
import stat
from pathlib import Path

from atoll.edge.state import AgentFile, LocalJob, StateDir
from atoll.platform.transfer.job import CartelJob, CartelSiteJob


def test_a_job_is_written_with_this_machines_paths_and_the_sites_own_identity(
    tmp_path: Path,
) -> None:
    state = StateDir(tmp_path / "state")
    geo = {"site": "a", "tls_dir": None}
    site_job = {"dataset": "digits", "geo": geo}
    identity = tmp_path / "state" / "identity"
    path = state.write_job(
        "j1", site_job, identity, identity / "crl.pem", tmp_path / "data", threads=1
    )
    written = json.loads(path.read_text())
    assert written["geo"]["secret_file"] is None  # no job secret: certificates authenticate
    assert written["geo"]["tls_dir"] == str(identity.resolve())
    assert written["geo"]["crl_file"] == str((identity / "crl.pem").resolve())
    assert written["data_dir"] == str(tmp_path / "data")
    assert written["threads"] == 1
    assert sorted(p.name for p in state.job_dir("j1").iterdir()) == ["site-job.json"]


def test_a_site_that_trains_alone_has_no_geo_section_to_fill(tmp_path: Path) -> None:
    path = StateDir(tmp_path).write_job("j1", {"geo": None}, tmp_path, tmp_path, None, None)
    assert json.loads(path.read_text()) == {"geo": None}


def test_a_cartel_site_gets_the_agents_identity_and_registry_access(tmp_path: Path) -> None:
    state = StateDir(tmp_path / "state")
    identity = tmp_path / "state" / "identity"
    job = CartelSiteJob(job_name="j", site="a", job=CartelJob(sites=("a", "b")),
                        endpoints={"a": "wss://h:1", "b": "wss://h:2"})  # fmt: skip
    state.write_job("j1", job.model_dump(mode="json"), identity, identity / "crl.pem", None, 2,
                    hardware={"device": "cuda", "bf16": True})  # fmt: skip
    state.give_registry("j1", "http://registry", "atoll_secret", "r1")
    written = CartelSiteJob.load(state.site_job_file("j1"))  # what `atoll site run` reads
    assert written.tls_dir == identity.resolve() and written.threads == 2
    assert (written.registry_url, written.registry_site_id) == ("http://registry", "r1")
    token = written.registry_token_file
    assert token is not None and token.read_text() == "atoll_secret"
    assert token.stat().st_mode & 0o777 == 0o600
    assert "atoll_secret" not in state.site_job_file("j1").read_text()


def test_the_agents_state_and_token_survive_a_restart(tmp_path: Path) -> None:
    state = StateDir(tmp_path)
    job = LocalJob(job_id="j1", state="running", created_at=1.0, restarts=2)
    state.save(AgentFile(draining=True, registry_id="r1", jobs={"j1": job}))
    state.save_registry_token("atoll_abc")
    again = StateDir(tmp_path)
    loaded = again.load()
    assert loaded.draining
    assert loaded.registry_id == "r1"
    assert loaded.jobs["j1"].restarts == 2
    assert again.registry_token() == "atoll_abc"
    assert stat.S_IMODE((tmp_path / "registry-token").stat().st_mode) == 0o600
