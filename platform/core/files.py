import json
import os
from pathlib import Path
from typing import Any


def write_atomically(path: Path, data: bytes) -> None:
    """Readers see the old file or the new one, never half of one, even after kill -9."""
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    tmp.replace(path)


def write_json(path: Path, data: dict[str, Any]) -> None:
    write_atomically(path, (json.dumps(data, indent=2, default=str) + "\n").encode())


def write_private(path: Path, data: bytes) -> None:
    """Readable by this user only from the first byte on (mode 0600), replaced atomically:
    for private keys and credentials."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    tmp.replace(path)
