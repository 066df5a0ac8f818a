"""Seeded per-site streams for the cartel scenarios, built from one labelled dataset.

Site i mostly sees four classes, 2i..2i+3 (mod the class count), so sites overlap
and every site has near twins: real logical neighbours exist. Two sites drift to
the mix of another site (site 1 to site 0's, site 2 to site 3's: pairs whose new
mix is no harder than the old, so "back to the pre-drift accuracy" is a fair
target for every policy):

- class-emergence: pure mixes; the site starts seeing two classes it never saw
  (and stops seeing two);
- prior-shift: skewed mixes (every class has a small tail share); the site's mix
  becomes the other site's;
- recurring: the prior-shift mixes alternate, three onsets.
"""

from dataclasses import dataclass

import numpy as np
import torch

from atoll.platform.data.datasets import Dataset

SCENARIOS = ("class-emergence", "prior-shift", "recurring")
MAJOR = 4  # classes each site mostly sees
TAIL = 0.12  # share of the other classes in the skewed mixes


@dataclass(frozen=True)
class Phase:
    start: int  # the batch it starts at
    priors: np.ndarray


@dataclass(frozen=True)
class SiteStream:
    site: int
    phases: tuple[Phase, ...]

    def priors_at(self, batch: int) -> np.ndarray:
        current = self.phases[0].priors
        for phase in self.phases:
            if phase.start <= batch:
                current = phase.priors
        return current

    @property
    def onsets(self) -> list[int]:
        return [p.start for p in self.phases[1:]]


def majors(site: int, num_classes: int) -> list[int]:
    return [(2 * site + j) % num_classes for j in range(MAJOR)]


def mix(classes: list[int], num_classes: int, tail: float) -> np.ndarray:
    priors = np.full(num_classes, tail / max(num_classes - len(classes), 1) if tail else 0.0)
    priors[classes] = (1 - tail) / len(classes)
    return priors / priors.sum()


DRIFTS = ((1, 0), (2, 3))  # (drifting site, the site whose mix it takes)


def drifts(sites: int) -> dict[int, int]:
    return {d: to for d, to in DRIFTS if d < sites and to < sites}


def build_streams(scenario: str, sites: int, batches: int, num_classes: int) -> list[SiteStream]:
    if scenario not in SCENARIOS:
        raise ValueError(f"unknown scenario {scenario!r}; choose one of {', '.join(SCENARIOS)}")
    if sites < 2:
        raise ValueError("a cartel needs at least 2 sites")
    tail = 0.0 if scenario == "class-emergence" else TAIL
    onset = batches // 3
    drifting = drifts(sites)
    streams = []
    for s in range(sites):
        own = mix(majors(s, num_classes), num_classes, tail)
        phases = [Phase(0, own)]
        if s in drifting:
            other = mix(majors(drifting[s], num_classes), num_classes, tail)
            if scenario == "recurring":
                step = batches // 4
                phases += [Phase(step, other), Phase(2 * step, own), Phase(3 * step, other)]
            else:
                phases.append(Phase(onset, other))
        streams.append(SiteStream(s, tuple(phases)))
    return streams


class StreamSampler:
    """Draws a site's batches from its own disjoint share of each class's samples, and
    keeps a fixed test sample per mix for the site's accuracy over time."""

    def __init__(
        self,
        stream: SiteStream,
        train: Dataset,
        test: Dataset,
        sites: int,
        seed: int,
        test_size: int = 200,
    ) -> None:
        self.stream = stream
        self.train = train
        self.test = test
        self.rng = np.random.default_rng([seed, stream.site])
        labels = train.y.numpy()
        self.pools = []
        for c in range(train.num_classes):
            indices = np.flatnonzero(labels == c)
            shares = np.array_split(np.random.default_rng([seed, c]).permutation(indices), sites)
            self.pools.append(shares[stream.site])
        test_labels = test.y.numpy()
        self.test_pools = [np.flatnonzero(test_labels == c) for c in range(test.num_classes)]
        self.test_size = test_size
        self._tests: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    def batch(self, index: int, size: int) -> tuple[torch.Tensor, torch.Tensor]:
        priors = self.stream.priors_at(index)
        counts = self.rng.multinomial(size, priors)
        chosen = np.concatenate(
            [self.rng.choice(self.pools[c], n) for c, n in enumerate(counts) if n]
        )
        self.rng.shuffle(chosen)
        index_t = torch.from_numpy(chosen)
        return self.train.x[index_t], self.train.y[index_t]

    def test_set(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The test sample of the mix in force at batch `index` (one per phase)."""
        phase = max(i for i, p in enumerate(self.stream.phases) if p.start <= index)
        if phase not in self._tests:
            priors = self.stream.phases[phase].priors
            rng = np.random.default_rng([7, self.stream.site, phase])
            counts = np.round(priors * self.test_size).astype(int)
            chosen = np.concatenate(
                [rng.choice(self.test_pools[c], n) for c, n in enumerate(counts) if n]
            )
            index_t = torch.from_numpy(chosen)
            self._tests[phase] = (self.test.x[index_t], self.test.y[index_t])
        return self._tests[phase]
