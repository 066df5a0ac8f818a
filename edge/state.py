"""What an agent keeps on disk between runs, under its state directory:

    agent.json          draining/removed, the registry id, every job it was given
    ledger.json         the commands it applied (edge/ledger.py)
    registry-token      its registry token (mode 0600)
    identity/           its key, certificate, the CA and revocation list (edge/identity.py)
    jobs/<id>/          site-job.json, run/ (the site's run folder)

Each file is replaced atomically, so a kill -9 leaves the old version or the new one.
"""

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from atoll.edge.ledger import CommandLedger
from atoll.platform.bus.messages import JobKind, SiteJobState
from atoll.platform.core.files import write_json, write_private
from atoll.platform.data.schema import SiteData


class LocalJob(BaseModel):
    model_config = ConfigDict(extra="ignore")

    job_id: str
    name: str = ""
    state: SiteJobState
    restarts: int = 0  # every time it was started again from its checkpoint
    failures: int = 0  # of those, the ones after it failed (bounded by max_restarts)
    stop_reason: str | None = None  # what a stop in progress (or done) was for
    message: str | None = None
    pid: int | None = None
    created_at: float
    class_priors: list[float] = []
    samples: int = 0
    model_signature: str = ""
    clocks: int = 0
    kind: JobKind = "geo"

    @property
    def active(self) -> bool:
        return self.state in ("starting", "running")


class AgentFile(BaseModel):
    model_config = ConfigDict(extra="ignore")

    draining: bool = False
    removed: bool = False
    registry_id: str | None = None
    jobs: dict[str, LocalJob] = {}


class StateDir:
    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)

    # the agent

    def load(self) -> AgentFile:
        path = self.root / "agent.json"
        return AgentFile.model_validate_json(path.read_text()) if path.exists() else AgentFile()

    def save(self, state: AgentFile) -> None:
        write_json(self.root / "agent.json", state.model_dump(mode="json"))

    def load_ledger(self) -> CommandLedger:
        path = self.root / "ledger.json"
        return (
            CommandLedger.from_json(json.loads(path.read_text()))
            if path.exists()
            else CommandLedger()
        )

    def save_ledger(self, ledger: CommandLedger) -> None:
        write_json(self.root / "ledger.json", ledger.to_json())

    def registry_token(self) -> str | None:
        path = self.root / "registry-token"
        if not path.exists():
            return None
        return path.read_text().strip() or None

    def save_registry_token(self, token: str) -> None:
        write_private(self.root / "registry-token", token.encode())

    # a job

    def job_dir(self, job_id: str) -> Path:
        return self.root / "jobs" / job_id

    def run_dir(self, job_id: str) -> Path:
        return self.job_dir(job_id) / "run"

    def site_job_file(self, job_id: str) -> Path:
        return self.job_dir(job_id) / "site-job.json"

    def give_registry(self, job_id: str, url: str, token: str | None, site_id: str | None) -> None:
        """A cartel site reports to the registry itself, as this site: its job file gets
        the registry's address and the path of a copy of the site's token (mode 0600)."""
        path = self.site_job_file(job_id)
        local = json.loads(path.read_text())
        token_file = self.job_dir(job_id) / "registry-token"
        if token is not None:
            write_private(token_file, token.encode())
        local |= {
            "registry_url": url,
            "registry_token_file": str(token_file.resolve()) if token is not None else None,
            "registry_site_id": site_id,
        }
        write_json(path, local)

    def write_job(
        self, job_id: str, site_job: dict[str, Any], identity_dir: Path, crl_file: Path,
        data_dir: Path | None, threads: int | None, data: SiteData | None = None,
        hardware: dict[str, Any] | None = None,
    ) -> Path:  # fmt: skip
        """The job's files, with this machine's paths in the site job; returns its file. Its
        geo links authenticate with the site's own certificate, from `identity_dir`."""
        folder = self.job_dir(job_id)
        folder.mkdir(parents=True, exist_ok=True)
        local = dict(site_job)
        if site_job.get("geo") is not None:  # None: a site that trains on its own
            local["geo"] = dict(
                site_job["geo"],
                secret_file=None,
                tls_dir=str(identity_dir.resolve()),
                crl_file=str(crl_file.resolve()),
            )
        if site_job.get("kind") == "cartel":  # its links are the agent's, as a geo site's
            local |= {"tls_dir": str(identity_dir.resolve()), "crl_file": str(crl_file.resolve())}
        if data is not None:
            local["data"] = data.model_dump(mode="json")
        if data_dir is not None:
            local["data_dir"] = str(data_dir)
        if threads is not None:
            local["threads"] = threads
        if site_job.get("kind") != "cartel":  # a cartel site's small online model: the CPU
            local.update(hardware or {})  # this machine's device choice
        path = self.site_job_file(job_id)
        write_json(path, local)
        return path
