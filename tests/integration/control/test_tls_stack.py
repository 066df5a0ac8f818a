"""The whole stack with TLS on, as docker-compose.yml runs it but as processes (the same
entrypoints, localstack/deployment.py): Redis only over TLS (rediss://), the registry,
the control plane and the dashboard over HTTPS with certificates from the federation's
CA, agents that enrol over HTTPS and train a job over mutual-TLS geo links."""

import ssl
from collections.abc import Iterator

import httpx
import pytest
from integration.control.harness import DIGITS_JOB, SITES, job_end

from atoll.localstack.deployment import AgentSpec, LocalDeployment

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalDeployment]:
    root = tmp_path_factory.mktemp("tls-stack")
    deployment = LocalDeployment(
        root, [AgentSpec(name, region) for name, region in SITES.items()], tls=True
    )
    try:
        yield deployment.start()
    finally:
        deployment.stop()


def test_every_service_speaks_tls_and_a_job_runs(stack: LocalDeployment) -> None:
    assert stack.bus_url.startswith("rediss://")
    for url in (stack.registry_url, stack.control_url, stack.web_url):
        assert url.startswith("https://")
        path = "/healthz" if url == stack.web_url else "/readyz"
        assert httpx.get(url + path, verify=stack.verify).status_code == 200
        with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            httpx.get(url + path, verify=ssl.create_default_context())  # not a public CA
        with pytest.raises(httpx.HTTPError):
            httpx.get(url.replace("https://", "http://") + path)  # no plain HTTP
    login = httpx.get(stack.web_url + "/login", verify=stack.verify)
    assert login.status_code == 200
    with stack.client() as client:
        job = client.submit({**DIGITS_JOB, "clocks": 60}, name="over-tls")
        done = job_end(client, job.id, 240)
    assert done.state == "completed", done.message
    assert done.wan_bytes > 0
