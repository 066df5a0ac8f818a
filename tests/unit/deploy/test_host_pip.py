"""deploy/images/host_pip.py: the host's pip configuration as a container's variables and
read-only mounts, so that pip in the image's Python reaches packages as the host's does."""

from types import ModuleType

import pytest

# What `pip config list` prints on a machine with a local wheel folder and index, a
# certificate bundle and a constraints file, both in files and in the environment.
CONFIG_LIST = """\
:env:.cert='/etc/ssl/certs/ca-certificates.crt'
:env:.find-links='/opt/wheels'
global.cert='/etc/ssl/certs/old-bundle.crt'
global.constraint='/etc/xdg/pip/constraints.txt'
global.extra-index-url='file:///opt/pypi/simple file:///opt/pypi-more/simple'
global.timeout='60'
install.user='true'
wheel.timeout='180'
"""


def test_each_setting_comes_from_its_strongest_section(host_pip: ModuleType) -> None:
    assert host_pip.parse_config_list(CONFIG_LIST) == {
        "cert": "/etc/ssl/certs/ca-certificates.crt",  # the environment over the files
        "find-links": "/opt/wheels",
        "constraint": "/etc/xdg/pip/constraints.txt",
        "extra-index-url": "file:///opt/pypi/simple file:///opt/pypi-more/simple",
        "timeout": "180",  # `pip wheel`'s own section over global
    }  # install.user is not a setting of `pip wheel`


@pytest.mark.parametrize(
    "line",
    ["global.cert", "cert='/x'", "global.timeout=60", "global.timeout=['a']"],
)
def test_a_line_that_is_not_pip_config_list_output_is_refused(
    host_pip: ModuleType, line: str
) -> None:
    with pytest.raises(ValueError, match=r"pip config list|quoted string"):
        host_pip.parse_config_list(line)


@pytest.mark.parametrize(
    ("value", "paths"),
    [
        ("/opt/wheels", ["/opt/wheels"]),
        ("file:///opt/pypi/simple https://pypi.org/simple", ["/opt/pypi/simple"]),
        ("file:///opt/with%20space", ["/opt/with space"]),
        ("180", []),
        ("https://mirror.example/simple", []),
        ("relative/folder", []),
    ],
)  # fmt: skip
def test_local_paths(host_pip: ModuleType, value: str, paths: list[str]) -> None:
    assert host_pip.local_paths(value) == paths


def test_container_args_set_the_variables_and_mount_what_exists(host_pip: ModuleType) -> None:
    settings = host_pip.parse_config_list(CONFIG_LIST)
    environ = {"HTTPS_PROXY": "http://127.0.0.1:3128", "HOME": "/root", "NO_PROXY": ""}
    existing = {
        "/etc/ssl/certs/ca-certificates.crt",
        "/opt/wheels",
        "/opt/pypi",
        "/etc/xdg/pip/constraints.txt",
    }  # not /opt/pypi-more: a missing path is named but not mounted
    assert host_pip.container_args(settings, environ, existing.__contains__) == [
        "--env=HTTPS_PROXY=http://127.0.0.1:3128",
        "--env=PIP_CERT=/etc/ssl/certs/ca-certificates.crt",
        "--env=PIP_CONSTRAINT=/etc/xdg/pip/constraints.txt",
        "--env=PIP_EXTRA_INDEX_URL=file:///opt/pypi/simple file:///opt/pypi-more/simple",
        "--env=PIP_FIND_LINKS=/opt/wheels",
        "--env=PIP_TIMEOUT=180",
        # a local index's pages link to files beside it: its parent folder is mounted
        "--volume=/etc/ssl/certs/ca-certificates.crt:/etc/ssl/certs/ca-certificates.crt:ro",
        "--volume=/etc/xdg/pip/constraints.txt:/etc/xdg/pip/constraints.txt:ro",
        "--volume=/opt/pypi:/opt/pypi:ro",
        "--volume=/opt/wheels:/opt/wheels:ro",
    ]


def test_without_configuration_the_container_gets_nothing(host_pip: ModuleType) -> None:
    assert host_pip.container_args(host_pip.parse_config_list(""), {}, lambda _: True) == []
