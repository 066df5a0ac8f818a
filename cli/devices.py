"""`atoll devices`: a site's device tier on Flower (its SuperLink and Atoll's ServerApp)."""

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:  # the CLI imports Flower's side only when a command needs it
    from atoll.platform.devices.launch import FlowerSite
    from atoll.platform.devices.spec import DeviceSiteSpec

app = typer.Typer(
    help="The device tier: devices train through Flower inside a site.",
    no_args_is_help=True,
    add_completion=False,
)


@app.callback()
def devices() -> None:
    """The device tier: devices train through Flower inside a site."""


@app.command("run")
def run(
    app_dir: Annotated[
        Path, typer.Argument(help="The Flower app devices run (its ClientApp is used as is).")
    ],
    out: Annotated[Path, typer.Option(help="The site's log.jsonl and model.npz go here.")],
    model: Annotated[
        str | None,
        typer.Option(help="'module:callable' building the model; default <pkg>.task:Net"),
    ] = None,
    rounds: Annotated[int, typer.Option(min=1)] = 3,
    min_replies: Annotated[int, typer.Option(min=1, help="A round needs this many devices.")] = 1,
    round_timeout: Annotated[float, typer.Option(help="A round's deadline, seconds.")] = 600.0,
    host: Annotated[str, typer.Option(help="Where the SuperLink listens.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="The SuperLink's one HTTP port.")] = 9092,
    tls_dir: Annotated[
        Path | None, typer.Option(help="ca.pem, superlink.pem, superlink.key: TLS to devices.")
    ] = None,
    node_auth: Annotated[
        bool, typer.Option(help="Only SuperNodes registered with `flwr supernode register`.")
    ] = False,
    run_config: Annotated[
        list[str] | None, typer.Option(help="KEY=VALUE for the app's run config; repeatable.")
    ] = None,
    timeout: Annotated[float, typer.Option(help="Longest wait for the run, seconds.")] = 3600.0,
    agent_state: Annotated[
        Path | None,
        typer.Option(
            help="The edge agent's state folder: run on the SuperLink its site file's "
            "`devices:` started (--host, --port, --tls-dir, --node-auth then come from there)."
        ),
    ] = None,
    max_restarts: Annotated[
        int, typer.Option(min=0, help="SuperLink restarts while the run goes on.")
    ] = 3,
) -> None:
    """Start the site's SuperLink, run Atoll's ServerApp on it for ROUNDS device rounds, and
    print each round. Devices join with `flower-supernode --superlink HOST:PORT`. A
    SuperLink that dies is started again and the run goes on (its state is on disk)."""
    import time
    import tomllib

    from atoll.platform.core.errors import AtollError
    from atoll.platform.devices.flower import FlowerTls, SuperLinkOptions
    from atoll.platform.devices.launch import FlowerSite
    from atoll.platform.devices.spec import DeviceSiteSpec

    pyproject = app_dir / "pyproject.toml"
    if not pyproject.exists():
        raise AtollError(f"{app_dir} is no Flower app: it has no pyproject.toml")
    if model is None:
        components = tomllib.loads(pyproject.read_text())["tool"]["flwr"]["app"]["components"]
        model = f"{str(components['clientapp']).split('.')[0]}.task:Net"
    tls = None if tls_dir is None else FlowerTls.in_folder(tls_dir)
    spec = DeviceSiteSpec(
        model=model,
        rounds=rounds,
        min_replies=min_replies,
        round_timeout_s=round_timeout,
        out_dir=out.resolve(),
    )
    overrides: dict[str, int | float | str] = {}
    for pair in run_config or []:
        key, sep, value = pair.partition("=")
        if not sep:
            raise AtollError(f"--run-config takes KEY=VALUE, not {pair!r}")
        overrides[key] = _value(value)
    if agent_state is not None:
        site = _agent_site(agent_state, spec, app_dir.resolve())
    else:
        work = (out / "flower").resolve()
        options = SuperLinkOptions(port, host, tls, node_auth, work / "flower.db")
        site = FlowerSite(spec, app_dir.resolve(), options, work)
    try:
        address = site.superlink.address
        if agent_state is None:
            site.start_superlink()
            print(
                f"SuperLink on {address}; devices join with: flower-supernode "
                f"--superlink {address} {'--root-certificates ca.pem' if tls else '--insecure'}"
            )
        else:
            print(f"on the edge agent's SuperLink ({address} from here)")
        site.start_run(overrides)
        seen = 0
        deadline = time.monotonic() + timeout
        while True:
            done = site.rounds_done()
            for r in done[seen:]:
                accuracy = "-" if r.device_accuracy is None else f"{r.device_accuracy:.4f}"
                print(
                    f"round {r.round}: {r.replied}/{r.devices} devices, {r.refused} refused, "
                    f"device accuracy {accuracy}, {r.round_s:.1f} s",
                    flush=True,
                )
            seen = len(done)
            if seen >= rounds:
                site.wait(max(deadline - time.monotonic(), 1.0), max_restarts=max_restarts)
                break
            site.wait_step(deadline, max_restarts=max_restarts)
    finally:
        site.stop()
    print(f"model: {spec.out_dir / 'model.npz'}; log: {spec.out_dir / 'log.jsonl'}")


def _agent_site(state_dir: Path, spec: "DeviceSiteSpec", app_dir: Path) -> "FlowerSite":
    """A run on the edge agent's SuperLink, through the Flower home the agent wrote (its
    address and TLS); the agent keeps the SuperLink up."""
    import tomllib

    from atoll.platform.core.errors import AtollError
    from atoll.platform.devices.flower import CONNECTION, SuperLinkOptions
    from atoll.platform.devices.launch import FlowerSite

    work = (state_dir / "devices").resolve()
    config = work / "flower-home" / "config.toml"
    if not config.exists():
        raise AtollError(f"no device tier under {state_dir}: does the agent's site file enable it?")
    address = str(tomllib.loads(config.read_text())["superlink"][CONNECTION]["address"])
    host, _, port = address.rpartition(":")
    return FlowerSite(spec, app_dir, SuperLinkOptions(int(port), host), work)


def _value(text: str) -> int | float | str:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text
