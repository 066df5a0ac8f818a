"""The core's log lines as the typed events a cartel site's log keeps."""

from atoll.platform.core.events import CartelHappening, CartelNoted
from atoll.platform.transfer.core import Log

_HAPPENINGS: dict[str, CartelHappening] = {
    "drift": "drift",
    "neighbours": "neighbours",
    "refused": "refused",
    "fetch-failed": "fetch-failed",
    "gave-up": "gave-up",
    "registry-down": "registry-down",
    "registry-up": "registry-up",
}


def noted(line: Log, time: float, step: int) -> CartelNoted | None:
    """None for "merged": a transfer is logged whole (CartelTransferred), from its lineage."""
    happening = _HAPPENINGS.get(line.event)
    if happening is None:
        return None
    fields = line.fields
    sites = fields.get("sites", [fields["source"]] if "source" in fields else [])
    classes = fields.get("classes", [])
    detector = fields.get("detector")
    return CartelNoted(
        time=time,
        step=step,
        happening=happening,
        message=line.message,
        sites=[str(s) for s in sites] if isinstance(sites, list) else [],
        classes=[int(c) for c in classes] if isinstance(classes, list) else [],
        detector=str(detector) if detector is not None else None,
    )
