"""What an agent keeps on disk between runs, under its state directory:

    agent.json          draining/removed, the registry id, every job it was given
    ledger.json         the commands it applied (edge/ledger.py)
    registry-token      its registry token (mode 0600)
    jobs/<id>/          site-job.json, secret (0600), tls/, run/ (the site's run folder)

Each file is replaced atomically, so a kill -9 leaves the old version or the new one.
"""

import json
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from atoll.edge.ledger import CommandLedger
from atoll.platform.bus.messages import SiteJobState, TlsFiles
from atoll.platform.core.files import write_json
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
        _write_private(self.root / "registry-token", token)

    # a job

    def job_dir(self, job_id: str) -> Path:
        return self.root / "jobs" / job_id

    def run_dir(self, job_id: str) -> Path:
        return self.job_dir(job_id) / "run"

    def site_job_file(self, job_id: str) -> Path:
        return self.job_dir(job_id) / "site-job.json"

    def write_job(
        self, job_id: str, site: str, site_job: dict[str, Any], secret: str, tls: TlsFiles | None,
        data_dir: Path | None, threads: int | None, data: SiteData | None = None,
        hardware: dict[str, Any] | None = None,
    ) -> Path:  # fmt: skip
        """The job's files, with this machine's paths in the site job; returns its file."""
        folder = self.job_dir(job_id)
        folder.mkdir(parents=True, exist_ok=True)
        secret_file = folder / "secret"
        _write_private(secret_file, secret)
        local = dict(site_job)
        if site_job.get("geo") is not None:  # None: a site that trains on its own
            geo = dict(site_job["geo"], secret_file=str(secret_file.resolve()), tls_dir=None)
            if tls is not None:
                tls_dir = folder / "tls"
                tls_dir.mkdir(exist_ok=True)
                (tls_dir / "ca.pem").write_text(tls.ca)
                (tls_dir / f"{site}.pem").write_text(tls.cert)
                _write_private(tls_dir / f"{site}.key", tls.key)
                geo["tls_dir"] = str(tls_dir.resolve())
            local["geo"] = geo
        if data is not None:
            local["data"] = data.model_dump(mode="json")
        if data_dir is not None:
            local["data_dir"] = str(data_dir)
        if threads is not None:
            local["threads"] = threads
        local.update(hardware or {})  # this machine's device choice
        path = self.site_job_file(job_id)
        write_json(path, local)
        return path


def _write_private(path: Path, text: str) -> None:
    """Readable by this user only from the first byte on, and replaced atomically."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    tmp.replace(path)
