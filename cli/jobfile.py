"""A job spec file (`--job job.yaml`), with command-line options over it: one `GeoJob`.

`atoll train`, `atoll sim` and `atoll control submit` read the same format; the control
plane also takes a cartel job (`kind: cartel`, a `CartelJob`). A bad file gets one error
that names the file and the field.
"""

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from atoll.cli.errors import problems
from atoll.platform.core.errors import AtollError
from atoll.platform.geo.job import GeoJob
from atoll.platform.transfer.job import CartelJob


def read_job_file(path: Path) -> dict[str, Any]:
    """The file's fields as a mapping (JSON is YAML too)."""
    import yaml  # here: `atoll --help` has no use for it

    if not path.is_file():
        raise AtollError(f"no job file {path}")
    try:
        fields = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        raise AtollError(f"{path} is neither YAML nor JSON: {e}") from e
    if fields is None:
        return {}
    if not isinstance(fields, dict):
        raise AtollError(f"{path}: a job file is a mapping of fields, not {type(fields).__name__}")
    return fields


def merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """`over` on top of `base`, nested mappings merged field by field."""
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def resolve_job(path: Path | None, options: dict[str, Any]) -> GeoJob:
    """The job in `path` (or the spec's defaults) with `options` on top, validated."""
    fields = merge(read_job_file(path) if path else {}, options)
    try:
        return GeoJob.model_validate(fields)
    except ValidationError as e:
        raise AtollError(f"{path}: {problems(e)}" if path else problems(e)) from None


def resolve_submission(path: Path, options: dict[str, Any]) -> GeoJob | CartelJob:
    """What `atoll control submit` sends: a geo job as `resolve_job` reads it, or a cartel
    job, taken as the file says (the job options are a geo job's fields)."""
    fields = read_job_file(path)
    if fields.get("kind") != "cartel":
        return resolve_job(path, options)
    if options:
        raise AtollError(f"{path} is a cartel job: the job options ({', '.join(options)}) "
                         "are a geo job's; set its fields in the file")  # fmt: skip
    try:
        return CartelJob.model_validate(fields)
    except ValidationError as e:
        raise AtollError(f"{path}: {problems(e)}") from None
