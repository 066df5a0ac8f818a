#!/usr/bin/env python3
"""The host's pip configuration, for a pip that runs in a container (deploy/images/build.sh).

build.sh downloads the image's wheels with the image's own Python, in a container: pip
resolves environment markers against the interpreter it runs on, and Debian's Python 3.11.2
needs packages that a newer 3.11 does not (redis needs async-timeout below 3.11.3). That
container must reach the packages the way the host does: the same indexes, certificates,
wheel folders and constraints. `pip config list` says what those are; this prints them as
the container's PIP_* variables plus read-only mounts of every local file or folder they
name, one podman argument a line:

    python3 deploy/images/host_pip.py    # --env=PIP_FIND_LINKS=/opt/wheels, --volume=...

Only the standard library: it runs with whatever Python the host has.
"""

import ast
import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from urllib.parse import unquote, urlparse

# pip's configuration sections that apply to `pip wheel`, weakest first: pip lets a
# command's own section override `global`, and the environment (`:env:`) override both.
SECTIONS = ("global", "wheel", ":env:")
# Variables whose paths are package indexes (see index_root).
INDEXES = ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL")
# Variables besides PIP_* that pip (through requests and urllib3) reads.
PASSED_THROUGH = (
    "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
    "REQUESTS_CA_BUNDLE", "SSL_CERT_FILE",
)  # fmt: skip


def parse_config_list(output: str) -> dict[str, str]:
    """`pip config list` output (`section.key='value'` lines) -> {key: value}, each key
    taken from the strongest section that sets it. Other sections are left out."""
    settings: dict[str, tuple[int, str]] = {}
    for line in output.splitlines():
        name, sep, raw = line.partition("=")
        section, dot, key = name.rpartition(".")
        if not sep or not dot:
            raise ValueError(f"not a `pip config list` line: {line!r}")
        if section not in SECTIONS:
            continue
        value = ast.literal_eval(raw)
        if not isinstance(value, str):
            raise ValueError(f"{name}: expected a quoted string, got {raw!r}")
        rank = SECTIONS.index(section)
        if key not in settings or settings[key][0] <= rank:
            settings[key] = (rank, value)
    return {key: value for key, (_, value) in settings.items()}


def index_root(path: str) -> str:
    """What to mount for a local index: a simple index's pages link to its files by relative
    paths (`../../files/x.whl`), usually beside its own folder, so its parent folder."""
    return str(Path(path).parent)


def local_paths(value: str) -> list[str]:
    """The absolute paths a setting names: plain paths and file:// URLs, space-separated."""
    paths = []
    for token in value.split():
        if token.startswith("file://"):
            paths.append(unquote(urlparse(token).path))
        elif token.startswith("/"):
            paths.append(token)
    return paths


def container_args(
    settings: Mapping[str, str], environ: Mapping[str, str], exists: Callable[[str], bool]
) -> list[str]:
    """podman arguments giving a container's pip the host's settings: a PIP_* variable per
    setting, the variables in PASSED_THROUGH that are set, and a read-only mount, at the
    same path, of each local path they name that exists on the host."""
    variables = {f"PIP_{key.upper().replace('-', '_')}": value for key, value in settings.items()}
    variables.update({name: environ[name] for name in PASSED_THROUGH if environ.get(name)})
    mounts = sorted(
        {
            mounted
            for name, value in variables.items()
            for path in local_paths(value)
            if exists(mounted := index_root(path) if name in INDEXES else path)
        }
    )
    return [
        *(f"--env={name}={value}" for name, value in sorted(variables.items())),
        *(f"--volume={path}:{path}:ro" for path in mounts),
    ]


def main() -> int:
    listed = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, check=True
    )
    args = container_args(
        parse_config_list(listed.stdout), os.environ, lambda path: Path(path).exists()
    )
    print("\n".join(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
