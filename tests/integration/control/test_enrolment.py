"""Enrolment at the real control plane (its HTTP API, its CA, a real Redis): a site's agent
sends a CSR for the key it made and its one-time token; a wrong or used token is refused
with a clear message and creates nothing. Then what the site's own Redis user may do:
only its own part of Redis, each refusal in Redis's ACL log under the site's user."""

import secrets
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from cryptography import x509
from integration.control.harness import scratch_bus, shared_redis_url
from pydantic import SecretStr
from redis.exceptions import NoPermissionError

from atoll.edge.identity import Identity, make_key_and_csr
from atoll.platform.bus.acl import site_user
from atoll.platform.bus.connection import Bus
from atoll.platform.bus.keys import AGENT_GROUP
from atoll.platform.bus.messages import Beat, Command, Telemetry
from atoll.platform.control.authority import init_authority
from atoll.platform.control.core.config import ControlSettings
from atoll.platform.control.main import create_app
from atoll.platform.control.migrate import SCHEMA
from atoll.platform.net.tls import SITE_URI_PREFIX

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from fastapi.testclient import TestClient

pytestmark = pytest.mark.integration
ADMIN = "test-admin-" + secrets.token_hex(12)
AUTH = {"Authorization": f"Bearer {ADMIN}"}


@pytest.fixture
def bus() -> Iterator[Bus]:
    with scratch_bus(shared_redis_url()) as scratch:
        yield scratch
        for user in scratch.redis.acl_users():
            if user.startswith(f"{scratch.keys.prefix}-site-"):
                scratch.redis.acl_deluser(user)


@pytest.fixture
def api(tmp_path: Path, bus: Bus) -> Iterator[TestClient]:
    url = f"sqlite:///{tmp_path / 'control.db'}"
    SCHEMA.upgrade(url)
    init_authority(tmp_path / "ca")
    settings = ControlSettings(
        database_url=url,
        admin_token=SecretStr(ADMIN),
        redis_url=SecretStr(bus.url),
        redis_prefix=bus.keys.prefix,
        ca_dir=tmp_path / "ca",
        tick_s=0.05,
    )
    with TestClient(create_app(settings)) as client:
        yield client


def token_for(api: TestClient, site: str) -> str:
    answer = api.post(f"/v1/sites/{site}/token", headers=AUTH)
    assert answer.status_code == 201, answer.text
    return str(answer.json()["token"])


def csr_for(tmp_path: Path, site: str) -> str:
    return make_key_and_csr(Identity(site, tmp_path / site / "identity"))


def enrol(api: TestClient, token: str, csr: str) -> dict:
    answer = api.post("/v1/enrol", json={"token": token, "csr": csr})
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def site_users(bus: Bus) -> list[str]:
    return [u for u in bus.redis.acl_users() if u.startswith(f"{bus.keys.prefix}-site-")]


def test_a_site_enrols_its_own_key_once(api: TestClient, bus: Bus, tmp_path: Path) -> None:
    token = token_for(api, "lisbon")
    assert api.get("/v1/sites/lisbon").json()["name"] == "lisbon"  # declared with its token
    csr = csr_for(tmp_path, "lisbon")
    enrolled = enrol(api, token, csr)
    cert = x509.load_pem_x509_certificate(enrolled["certificate"].encode())
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.UniformResourceIdentifier) == [SITE_URI_PREFIX + "lisbon"]
    request = x509.load_pem_x509_csr(csr.encode())
    assert cert.public_key() == request.public_key()  # its own key, which never left it
    ca = x509.load_pem_x509_certificate(enrolled["ca"].encode())
    cert.verify_directly_issued_by(ca)
    assert "PRIVATE KEY" not in str(enrolled)
    assert enrolled["redis_user"] == site_user(bus.keys, "lisbon")
    assert bus.redis.get(bus.keys.crl) is not None or api.get("/v1/crl").status_code == 200


def test_a_wrong_or_used_token_is_refused_clearly_and_creates_nothing(
    api: TestClient, bus: Bus, tmp_path: Path
) -> None:
    token = token_for(api, "oslo")
    csr = csr_for(tmp_path, "oslo")
    wrong = api.post("/v1/enrol", json={"token": "atoll_not-a-token", "csr": csr})
    assert wrong.status_code == 401
    assert "unknown or already used" in wrong.json()["message"]
    assert "atoll sites token NAME" in wrong.json()["message"]
    assert site_users(bus) == []  # no Redis user, and no certificate (the CRL lists none)
    bad = api.post("/v1/enrol", json={"token": token, "csr": "not a CSR"})
    assert bad.status_code == 422
    assert bad.json()["problems"][0]["field"] == "csr"
    enrol(api, token, csr)  # the token was not spent by the bad request
    assert site_users(bus) == [site_user(bus.keys, "oslo")]
    again = api.post("/v1/enrol", json={"token": token, "csr": csr})
    assert again.status_code == 401
    assert "already used" in again.json()["message"]
    assert site_users(bus) == [site_user(bus.keys, "oslo")]


def login(bus: Bus, enrolled: dict) -> redis.Redis:
    host = bus.url.split("://", 1)[1].rsplit("@", 1)[-1]
    url = f"redis://{enrolled['redis_user']}:{enrolled['redis_password']}@{host}"
    return redis.Redis.from_url(url, decode_responses=True)


def test_a_sites_redis_user_reaches_only_its_own_part_of_redis(
    api: TestClient, bus: Bus, tmp_path: Path
) -> None:
    keys = bus.keys
    a = login(bus, enrol(api, token_for(api, "a"), csr_for(tmp_path, "a")))
    enrol(api, token_for(api, "b"), csr_for(tmp_path, "b"))
    for site in ("a", "b"):
        command = Command(id=f"c-{site}", site=site, kind="drain", issued_at=1.0)
        bus.publish_command(command)
    user = site_user(keys, "a")
    bus.redis.acl_log_reset()
    # What it may do: its own commands, its liveness key, append telemetry.
    mine = a.xreadgroup(AGENT_GROUP, "a", {keys.commands("a"): ">"}, count=10)
    assert [Command.decode(f).id for _, entries in mine for _, f in entries] == ["c-a"]
    a.xack(keys.commands("a"), AGENT_GROUP, mine[0][1][0][0])
    a.set(keys.alive("a"), Beat(time=1.0, state="idle", incarnation="i").model_dump_json())
    sample = Telemetry(site="a", job_id="j", time=1.0, kind="step", clock=1)
    a.xadd(keys.telemetry("a"), dict(sample.encode()))
    # What it may not: each refused by Redis.
    attempts = {
        "read another site's commands": lambda: a.xreadgroup(
            AGENT_GROUP, "a", {keys.commands("b"): ">"}
        ),
        "read another site's commands directly": lambda: a.xrange(keys.commands("b")),
        "acknowledge another site's commands": lambda: a.xack(
            keys.commands("b"), AGENT_GROUP, "0-1"
        ),
        "write another site's liveness key": lambda: a.set(keys.alive("b"), "{}"),
        "read the telemetry": lambda: a.xrange(keys.telemetry("a")),
        "write telemetry as another site": lambda: a.xadd(keys.telemetry("b"), {"m": "{}"}),
        "read its status reports": lambda: a.xread({keys.status("a"): "0"}),
        "report as another site": lambda: a.xadd(keys.status("b"), {"m": "{}"}),
        "write a command": lambda: a.xadd(keys.commands("b"), {"m": "{}"}),
        "list the keys": lambda: a.keys("*"),
        "change the users": lambda: a.acl_setuser(user, enabled=True, commands=["+@all"]),
    }
    for what, attempt in attempts.items():
        with pytest.raises(NoPermissionError):
            attempt()
            pytest.fail(f"site a could {what}")
    log = bus.redis.acl_log(count=50)
    refused = [entry for entry in log if entry["username"] == user]
    # Redis merges repeats of one refusal (same user, reason and object) into one entry.
    objects = {entry["object"] for entry in refused}
    # by key (a command it may run, on a key not its own) or by command (one it may not run)
    assert objects >= {keys.commands("b"), keys.alive("b"), keys.telemetry("b"), keys.status("b")}
    assert objects >= {"xrange", "xread", "keys"}


def test_revoking_a_site_removes_its_redis_user_and_lists_its_certificate(
    api: TestClient, bus: Bus, tmp_path: Path
) -> None:
    enrolled = enrol(api, token_for(api, "rome"), csr_for(tmp_path, "rome"))
    client = login(bus, enrolled)
    client.ping()
    answer = api.post("/v1/sites/rome/revoke", headers=AUTH)
    assert answer.json() == {"site": "rome", "certificates": 1}
    assert site_users(bus) == []
    with pytest.raises(redis.exceptions.RedisError):
        client.ping()  # its connection is closed, and its password no longer works
    with pytest.raises(redis.exceptions.RedisError):
        login(bus, enrolled).ping()
    serial = x509.load_pem_x509_certificate(enrolled["certificate"].encode()).serial_number
    crl = x509.load_pem_x509_crl(api.get("/v1/crl").content)
    assert crl.get_revoked_certificate_by_serial_number(serial) is not None
    published = x509.load_pem_x509_crl(bus.redis.get(bus.keys.crl).encode())  # for the sites
    assert published.get_revoked_certificate_by_serial_number(serial) is not None
