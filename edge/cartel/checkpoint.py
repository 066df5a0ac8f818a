"""A cartel site's checkpoint: one file, `<run>/checkpoint.pt`, replaced atomically, so a
site killed mid-write (kill -9) resumes from the one before.

It holds the model and its optimizer, the core's state (platform/transfer/resume.py), the
batch the stream goes on from, the scenario sampler's generator (its batches are random
draws; an own-data stream is a function of the batch number alone) and the site's latest
lineage record in the registry (the parent of its next one).
"""

import io
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from pickle import UnpicklingError
from typing import Any

import torch

from atoll.platform.core.errors import AtollError
from atoll.platform.core.files import write_atomically
from atoll.platform.transfer.resume import CoreState

FILE = "checkpoint.pt"
_FORMAT = 1


@dataclass(frozen=True)
class SiteCheckpoint:
    job_name: str
    site: str
    signature: str  # the model's: a checkpoint of another model is not this job's
    step: int  # batches done; the stream goes on with batch `step`
    core: CoreState
    sampler_rng: Mapping[str, Any] | None
    lineage_parent: str | None
    model: dict[str, torch.Tensor]
    optimizer: dict[str, Any]

    def save(self, run_dir: Path) -> None:
        meta = {
            "format": _FORMAT,
            "job_name": self.job_name,
            "site": self.site,
            "signature": self.signature,
            "step": self.step,
            "core": self.core.to_json(),
            "sampler_rng": self.sampler_rng,
            "lineage_parent": self.lineage_parent,
        }
        buffer = io.BytesIO()
        # The metadata as one JSON string: torch's safe loader (weights_only) takes tensors
        # and plain containers, and numpy's generator state has integers too big for them.
        torch.save(
            {"meta": json.dumps(meta), "model": self.model, "optimizer": self.optimizer}, buffer
        )
        write_atomically(run_dir / FILE, buffer.getvalue())


def load_checkpoint(
    run_dir: Path, job_name: str, site: str, signature: str
) -> SiteCheckpoint | None:
    """The site's checkpoint of this job, or None when it has none yet."""
    path = run_dir / FILE
    if not path.exists():
        return None
    try:
        record = torch.load(path, weights_only=True)
        meta = json.loads(record["meta"])
        if meta["format"] != _FORMAT:
            raise ValueError(f"format {meta['format']}, not {_FORMAT}")
        found = SiteCheckpoint(
            job_name=meta["job_name"],
            site=meta["site"],
            signature=meta["signature"],
            step=int(meta["step"]),
            core=CoreState.from_json(meta["core"]),
            sampler_rng=meta["sampler_rng"],
            lineage_parent=meta["lineage_parent"],
            model=record["model"],
            optimizer=record["optimizer"],
        )
    except (OSError, RuntimeError, ValueError, KeyError, TypeError, UnpicklingError) as e:
        first = (str(e).splitlines() or [""])[0]  # torch's loader explains at length
        raise AtollError(f"{path}: unreadable checkpoint ({type(e).__name__}: {first})") from e
    mine = (job_name, site, signature)
    if (found.job_name, found.site, found.signature) != mine:
        raise AtollError(
            f"{path} is {found.site}'s checkpoint of job {found.job_name} ({found.signature}), "
            f"not {site}'s of {job_name} ({signature})"
        )
    return found
