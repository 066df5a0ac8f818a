import shutil
from pathlib import Path

from atoll.platform.core.errors import AtollError


def claim_run_dir(out_dir: Path, overwrite: bool) -> None:
    """A run folder holds one run: an earlier one is replaced only when asked to."""
    if out_dir.exists() and any(out_dir.iterdir()):
        if not overwrite:
            raise AtollError(
                f"{out_dir} already holds a run; pass --overwrite to replace it"
                " (or --resume, where the command has it, to continue it)"
            )
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
