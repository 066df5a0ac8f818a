"""The site job these tests share: small enough to train in seconds on scikit-learn's
digits, with two workers and two shards so that the site's communication is exercised."""

from typing import Any

SMALL_DIGITS_JOB: dict[str, Any] = {
    "dataset": "digits",
    "model": "mlp",
    "workers": 2,
    "shards": 2,
    "batch_size": 16,
    "threads": 1,
}
