"""Shard checkpoints: each shard saves its slice, rank 0 commits the step once all have.

Layout: `<root>/step-00000040/shard-<s>.pt` and `<root>/latest.json`, which names
the last step whose every shard reached disk. A step is restored by range, so a
site may resume with a different number of shards.
"""

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from atoll.platform.core.errors import AtollError
from atoll.platform.core.files import write_atomically


@dataclass(frozen=True)
class Checkpoint:
    step: int
    meta: dict[str, Any]


class CheckpointStore:
    def __init__(self, root: Path, keep: int = 2) -> None:
        self.root = root
        self.keep = keep

    def _step_dir(self, step: int) -> Path:
        return self.root / f"step-{step:08d}"

    def save_shard(
        self, step: int, shard: int, bounds: tuple[int, int], param: torch.Tensor, optimizer: dict
    ) -> None:
        folder = self._step_dir(step)
        folder.mkdir(parents=True, exist_ok=True)
        record = {
            "start": bounds[0],
            "end": bounds[1],
            # Host copies: a checkpoint written on a GPU loads on any machine.
            "param": param.detach().to("cpu", copy=True),
            "optimizer": {
                k: v.detach().cpu() if isinstance(v, torch.Tensor) else v
                for k, v in optimizer.items()
            },
        }
        tmp = folder / f"shard-{shard}.pt.tmp"
        torch.save(record, tmp)
        tmp.replace(folder / f"shard-{shard}.pt")

    def commit(self, step: int, meta: dict[str, Any]) -> None:
        """Call once every shard of `step` has saved; older steps beyond `keep` are removed."""
        meta = {**meta, "step": step}
        write_atomically(self.root / "latest.json", json.dumps(meta, indent=1).encode())
        done = sorted(p for p in self.root.glob("step-*") if p.is_dir())
        for old in done[: -self.keep]:
            shutil.rmtree(old, ignore_errors=True)

    def latest(self) -> Checkpoint | None:
        path = self.root / "latest.json"
        if not path.exists():
            return None
        try:
            meta = json.loads(path.read_text())
            return Checkpoint(int(meta["step"]), meta)
        except (ValueError, KeyError, TypeError) as e:
            raise AtollError(f"checkpoint manifest {path} is unreadable: {e}") from e

    def load_slice(self, step: int, bounds: tuple[int, int]) -> tuple[torch.Tensor, dict]:
        """The parameters and per-element optimizer state of [start, end) at `step`."""
        start, end = bounds
        pieces = []
        for path in sorted(self._step_dir(step).glob("shard-*.pt")):
            record = torch.load(path, weights_only=True)
            if record["start"] < end and record["end"] > start:
                pieces.append(record)
        pieces.sort(key=lambda r: r["start"])
        covered = start
        for r in pieces:
            if r["start"] > covered:
                break
            covered = max(covered, r["end"])
        if covered < end:
            raise AtollError(
                f"checkpoint step {step} in {self.root} does not cover parameters {start}..{end}"
            )

        def cut(tensors: list[tuple[dict, torch.Tensor]]) -> torch.Tensor:
            parts = [
                t[max(start, r["start"]) - r["start"] : min(end, r["end"]) - r["start"]]
                for r, t in tensors
            ]
            return torch.cat(parts).clone()

        param = cut([(r, r["param"]) for r in pieces])
        state: dict[str, Any] = {}
        for key, value in pieces[0]["optimizer"].items():
            if isinstance(value, torch.Tensor) and value.dim() == 1:
                state[key] = cut([(r, r["optimizer"][key]) for r in pieces])
            else:
                state[key] = value  # scalars such as Adam's step count are equal in every shard
        return param, state
