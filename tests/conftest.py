"""Fixtures shared by every test. A test that needs a service or dataset fails under
CI=true when it is missing, and skips (saying why) on a developer machine."""

from pathlib import Path

import pytest
from support import FASHION_MNIST, require


@pytest.fixture(scope="session")
def fashion_mnist() -> Path:
    require(
        (FASHION_MNIST / "train-images-idx3-ubyte.gz").exists(),
        "Fashion-MNIST (apt-get install -y dataset-fashion-mnist)",
    )
    return FASHION_MNIST
