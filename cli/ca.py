"""`atoll ca`: the federation's certificate authority (held by the control plane)."""

from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(
    help="The federation's CA: make it; issue the services' TLS certificates.",
    no_args_is_help=True,
)
FolderArgument = Annotated[Path, typer.Argument(help="The CA's folder (ca.pem, ca.key).")]


@app.command("init")
def init(folder: FolderArgument) -> None:
    """Make a new CA in FOLDER (its key is written 0600); the control plane's ATOLL_CA_DIR."""
    from atoll.platform.control.authority import init_authority

    cert = init_authority(folder)
    print(f"made a CA in {folder}; every party trusts {cert} (ATOLL_CA_FILE)")


@app.command("server-cert")
def server_cert(
    folder: FolderArgument,
    host: Annotated[list[str], typer.Option("--host", help="A DNS name or IP; repeatable.")],
    cert: Annotated[Path, typer.Option(help="Where to write the certificate (PEM).")],
    key: Annotated[Path, typer.Option(help="Where to write its new key (PEM, 0600).")],
) -> None:
    """A TLS server certificate for a service (ATOLL_TLS_CERT_FILE, ATOLL_TLS_KEY_FILE)."""
    from atoll.platform.control.authority import issue_server_certificate

    issue_server_certificate(folder, host, cert, key)
    print(f"wrote {cert} and {key} for {', '.join(host)}")


@app.command("bootstrap")
def bootstrap(
    folder: FolderArgument,
    tls_dir: Annotated[
        Path, typer.Option(help="Where the services' certificate and key go (server.pem/.key).")
    ],
    public_dir: Annotated[Path, typer.Option(help="Where only the CA's certificate goes.")],
    host: Annotated[list[str], typer.Option("--host", help="A service's host name; repeatable.")],
) -> None:
    """What a deployment needs before its services start, made once (it changes nothing
    that is there): a CA in FOLDER, one certificate for the services' HOSTs, and the CA's
    certificate alone in PUBLIC_DIR, for the sites. docker-compose.yml's `certs` step."""
    import shutil

    from atoll.platform.control.authority import CA_CERT, init_authority, issue_server_certificate

    if not (folder / CA_CERT).exists():
        init_authority(folder)
        print(f"made a CA in {folder}")
    cert, key = tls_dir / "server.pem", tls_dir / "server.key"
    if not cert.exists() or not key.exists():
        issue_server_certificate(folder, host, cert, key)
        shutil.copy(folder / CA_CERT, tls_dir / CA_CERT)
        print(f"wrote {cert} for {', '.join(host)}")
    public_dir.mkdir(parents=True, exist_ok=True)
    shutil.copy(folder / CA_CERT, public_dir / CA_CERT)
