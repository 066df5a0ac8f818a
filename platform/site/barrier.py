"""Bulk-synchronous barrier accounting for one parameter-server shard, sans I/O.

The shard feeds in each worker's gradient push (worker, clock, time) as it
arrives; the barrier says when the clock is complete and may be applied, who is
still missing, and how long the shard waited for stragglers. Time is an input,
so the rules are tested without processes.
"""

from dataclasses import dataclass


class BarrierViolation(Exception):
    """A push that BSP forbids: unknown worker, a repeat, or a clock not being gathered."""


@dataclass(frozen=True)
class ClockComplete:
    clock: int
    straggler_wait_s: float  # from the first push of this clock to the last


class BSPBarrier:
    def __init__(self, workers: int, clock: int = 0) -> None:
        if workers < 1:
            raise ValueError("a barrier needs at least one worker")
        self.workers = workers
        self.clock = clock  # the clock whose gradients are being gathered
        self.total_wait_s = 0.0
        self._arrived: set[int] = set()
        self._first_push_at: float | None = None

    def push(self, worker: int, clock: int, now: float) -> ClockComplete | None:
        """Record one gradient; returns the decision to apply once all workers pushed."""
        if not 0 <= worker < self.workers:
            raise BarrierViolation(f"push from unknown worker {worker}")
        if clock != self.clock:
            raise BarrierViolation(
                f"worker {worker} pushed clock {clock} while clock {self.clock} is being gathered"
            )
        if worker in self._arrived:
            raise BarrierViolation(f"worker {worker} pushed clock {clock} twice")
        if self._first_push_at is None:
            self._first_push_at = now
        self._arrived.add(worker)
        if len(self._arrived) < self.workers:
            return None
        wait = now - self._first_push_at
        self.total_wait_s += wait
        done = ClockComplete(self.clock, wait)
        self.clock += 1
        self._arrived.clear()
        self._first_push_at = None
        return done

    def missing(self) -> list[int]:
        """Workers whose gradient for the current clock has not arrived (named on a stall)."""
        return [w for w in range(self.workers) if w not in self._arrived]
