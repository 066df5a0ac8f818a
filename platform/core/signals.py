"""SIGTERM and SIGINT turned into a stop request, for the processes that supervise others."""

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def stop_signals(request_stop: Callable[[str], None]) -> Iterator[None]:
    """Call `request_stop` with the signal's name ("SIGTERM", "SIGINT") while inside.

    Off the main thread Python cannot install handlers, so there it does nothing: the
    caller is then embedded (a test, a notebook) and is stopped by its host. The previous
    handlers come back on the way out."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_signal(signum: int, _frame: object) -> None:
        request_stop(signal.Signals(signum).name)

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
