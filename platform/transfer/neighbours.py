"""What a site reports, and Cartel's choice of logical neighbours among reports.

Neighbours share the model signature, are live, are good on the classes that
drifted, and are ranked by Jensen-Shannon divergence of class priors (bits), or
drawn at random for the random-neighbour baseline. Pure functions, no I/O.
"""

import struct
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.spatial.distance import jensenshannon


@dataclass(frozen=True)
class SiteReport:
    """A site's metadata, a few hundred bytes: what the registry keeps per site."""

    site: str
    time_s: float
    class_priors: tuple[float, ...]
    accuracy: float
    class_accuracy: tuple[float | None, ...]  # None: too few samples of the class lately
    class_samples: tuple[int, ...]
    samples: int
    signature: str
    version: int
    drift: bool
    endpoint: str | None = None


def divergence(p: Sequence[float], q: Sequence[float]) -> float:
    """Jensen-Shannon divergence in bits (0 same, 1 disjoint); scipy gives its square root."""
    width = max(len(p), len(q))
    a = np.zeros(width)
    b = np.zeros(width)
    a[: len(p)] = p
    b[: len(q)] = q
    if a.sum() <= 0 or b.sum() <= 0:
        return 1.0
    return float(jensenshannon(a, b, base=2) ** 2)


def good_on(report: SiteReport, classes: Sequence[int], min_accuracy: float) -> bool:
    return accurate_on(report.class_accuracy, classes, min_accuracy)


def accurate_on(
    class_accuracy: Sequence[float | None], classes: Sequence[int], min_accuracy: float
) -> bool:
    """Every one of `classes` known (an accuracy reported on it) and the mean accuracy over
    them at least `min_accuracy`. The mean, not each one: a class that is hard everywhere
    (Fashion-MNIST's shirt) would otherwise rule out every neighbour."""
    known = []
    for c in classes:
        accuracy = class_accuracy[c] if c < len(class_accuracy) else None
        if accuracy is None:
            return False
        known.append(accuracy)
    return bool(known) and sum(known) / len(known) >= min_accuracy


def choose_neighbours(
    reports: Sequence[SiteReport],
    *,
    asking: str,
    priors: Sequence[float],
    signature: str,
    drifted: Sequence[int],
    now_s: float,
    live_window_s: float,
    min_accuracy: float,
    k: int,
    rng: np.random.Generator | None = None,
) -> list[SiteReport]:
    """The k sites to try, best first. With `rng`: k random live sites with the
    signature, accuracy unchecked (the random-neighbour baseline)."""
    live = [
        r
        for r in reports
        if r.site != asking and r.signature == signature and now_s - r.time_s <= live_window_s
    ]
    if rng is not None:
        order = rng.permutation(len(live))
        return [live[i] for i in order[:k]]
    good = [r for r in live if good_on(r, drifted, min_accuracy)]
    good.sort(key=lambda r: (round(divergence(priors, r.class_priors), 12), r.site))
    return good[:k]


# The wire form of a report: fixed-point numbers and varints, not JSON. A report is the
# message every site sends all the time, so its size sets the metadata bytes: about 90
# bytes with 10 classes, against about 650 as JSON with full-precision floats.
_HEAD = struct.Struct("<BdHIIB")  # flags, time_s, accuracy, samples, version, classes
_NONE = 255  # a class accuracy of None
_DRIFT, _ENDPOINT = 1, 2


def _text(value: str) -> bytes:
    raw = value.encode()
    if len(raw) > 255:
        raise ValueError(f"{value[:20]!r}... is longer than 255 bytes")
    return bytes([len(raw)]) + raw


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def encode_report(report: SiteReport) -> bytes:
    """Accuracy as a fraction of 65535; priors and class accuracy in 254ths (a prior of
    1/254 is a class seen about once in the 100 samples of the priors window; 255 is a
    class accuracy of None); class samples as varints. Precise enough to rank and filter
    neighbours: the Jensen-Shannon ranking moves by less than 0.01 bits."""
    n = len(report.class_priors)
    if len(report.class_accuracy) != n or len(report.class_samples) != n or n > 255:
        raise ValueError("priors, class accuracy and class samples must have one entry per class")
    flags = (_DRIFT if report.drift else 0) | (_ENDPOINT if report.endpoint else 0)
    parts = [
        _HEAD.pack(
            flags,
            report.time_s,
            round(report.accuracy * 65535),
            report.samples,
            report.version,
            n,
        ),
        _text(report.site),
        _text(report.signature),
        _text(report.endpoint) if report.endpoint else b"",
        bytes(round(p * 254) for p in report.class_priors),
        bytes(_NONE if a is None else round(a * 254) for a in report.class_accuracy),
        *(_varint(count) for count in report.class_samples),
    ]
    return b"".join(parts)


def decode_report(blob: bytes) -> SiteReport:
    """The report `encode_report` wrote, to its precision; ValueError if malformed."""
    try:
        flags, time_s, accuracy, samples, version, n = _HEAD.unpack_from(blob)
        offset = _HEAD.size
        texts = []
        for _ in range(3 if flags & _ENDPOINT else 2):
            size = blob[offset]
            texts.append(blob[offset + 1 : offset + 1 + size].decode())
            offset += 1 + size
        priors = blob[offset : offset + n]
        accuracies = blob[offset + n : offset + 2 * n]
        offset += 2 * n
        counts = []
        for _ in range(n):
            count, shift = 0, 0
            while True:
                byte = blob[offset]
                offset += 1
                count |= (byte & 0x7F) << shift
                shift += 7
                if not byte & 0x80:
                    break
            counts.append(count)
    except (struct.error, IndexError, UnicodeDecodeError) as e:
        raise ValueError(f"malformed report: {e}") from e
    if offset != len(blob) or len(accuracies) != n or any(p > 254 for p in priors):
        raise ValueError(f"malformed report: {len(blob)} bytes, {offset} expected")
    return SiteReport(
        site=texts[0],
        time_s=time_s,
        class_priors=tuple(p / 254 for p in priors),
        accuracy=accuracy / 65535,
        class_accuracy=tuple(None if a == _NONE else a / 254 for a in accuracies),
        class_samples=tuple(counts),
        samples=samples,
        signature=texts[1],
        version=version,
        drift=bool(flags & _DRIFT),
        endpoint=texts[2] if flags & _ENDPOINT else None,
    )
