"""How values read on a page: bytes in IEC units, times in UTC with relative time,
numbers grouped, statuses as text with an icon (never colour alone)."""

import math
from dataclasses import dataclass
from datetime import UTC, datetime

_IEC = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")


def iec_bytes(n: float | None) -> str:
    """1536 -> '1.5 KiB'; below 1 KiB, exact bytes."""
    if n is None:
        return "–"
    value, unit = float(n), 0
    while abs(value) >= 1024 and unit < len(_IEC) - 1:
        value /= 1024
        unit += 1
    if unit == 0:
        return f"{int(value)} B"
    return f"{value:.1f} {_IEC[unit]}" if abs(value) < 100 else f"{value:.0f} {_IEC[unit]}"


def number(n: float | None, digits: int = 0) -> str:
    if n is None or (isinstance(n, float) and not math.isfinite(n)):
        return "–"
    return f"{n:,.{digits}f}"


def percent(x: float | None, digits: int = 1) -> str:
    return "–" if x is None else f"{x * 100:.{digits}f} %"


def utc(t: datetime | float | None) -> str:
    """'2026-11-26 13:05:09 UTC'."""
    when = as_datetime(t)
    return "–" if when is None else when.strftime("%Y-%m-%d %H:%M:%S UTC")


def iso(t: datetime | float | None) -> str:
    when = as_datetime(t)
    return "" if when is None else when.isoformat(timespec="seconds").replace("+00:00", "Z")


def as_datetime(t: datetime | float | None) -> datetime | None:
    if t is None:
        return None
    if isinstance(t, datetime):
        return (t if t.tzinfo else t.replace(tzinfo=UTC)).astimezone(UTC)
    return datetime.fromtimestamp(t, UTC)


def relative(t: datetime | float | None, now: datetime) -> str:
    """'12 s ago', '3 min ago', '2 h ago', '5 d ago', or 'in 4 min'."""
    when = as_datetime(t)
    if when is None:
        return "never"
    seconds = (now - when).total_seconds()
    ahead = seconds < 0
    seconds = abs(seconds)
    if seconds < 2:
        return "just now"
    for size, unit in ((86400, "d"), (3600, "h"), (60, "min"), (1, "s")):
        if seconds >= size:
            text = f"{int(seconds // size)} {unit}"
            return f"in {text}" if ahead else f"{text} ago"
    raise AssertionError("unreachable")


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, s = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {s} s"
    hours, m = divmod(minutes, 60)
    return f"{hours} h {m} min"


@dataclass(frozen=True)
class Status:
    """A status as shown: text, an icon that differs per kind, and a tone for colour (the
    text and icon carry the meaning; colour only repeats it)."""

    text: str
    icon: str
    tone: str  # ok | warn | bad | idle | info


_TONES = {
    # sites, as operators decided and as they are
    "online": ("●", "ok"),
    "offline": ("○", "bad"),
    "active": ("✓", "ok"),
    "draining": ("⏸", "warn"),
    "removed": ("✕", "idle"),
    "never joined": ("…", "idle"),
    # jobs and a site's part in one
    "pending": ("…", "info"),
    "assigned": ("…", "info"),
    "starting": ("▶", "info"),
    "running": ("▶", "ok"),
    "paused": ("⏸", "warn"),
    "stopped": ("⏸", "warn"),
    "completed": ("✓", "ok"),
    "finished": ("✓", "ok"),
    "failed": ("✕", "bad"),
    "cancelled": ("⊘", "idle"),
    # registry liveness, tokens
    "live": ("●", "ok"),
    "stale": ("◌", "warn"),
    "deregistered": ("✕", "idle"),
    "revoked": ("✕", "idle"),
    "valid": ("✓", "ok"),
}


def status(text: str) -> Status:
    icon, tone = _TONES.get(text, ("•", "info"))
    return Status(text, icon, tone)
