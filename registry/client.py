"""A typed client for the registry's HTTP API, with timeouts and retries.

Retries are safe by construction: a request that never reached the server is
retried whatever it was; one that may have reached it is retried only when
repeating it cannot do anything twice. Reports and model records carry an id
chosen here, so their retries are stored once.
"""

import os
from collections.abc import Iterator, Sequence
from typing import Any
from uuid import UUID, uuid4

from atoll.platform.service.client import (
    READINESS_RETRY_STATUSES,
    ServiceClient,
    ServiceError,
    ServiceUnavailable,
    admin_token_from_env,
)
from atoll.platform.service.schemas import Readiness
from atoll.registry.core.config import DEFAULT_PORT
from atoll.registry.schemas import (
    Artifact,
    ArtifactPage,
    Lineage,
    NeighbourList,
    Report,
    ReportPage,
    Site,
    SiteCreated,
    SitePage,
    TokenCreated,
    TokenInfo,
    TokenList,
)

DEFAULT_URL = f"http://127.0.0.1:{DEFAULT_PORT}"


class RegistryError(ServiceError):
    """The registry refused a request; `problems` names each field and what is wrong."""

    service = "the registry"


class RegistryUnavailable(ServiceUnavailable):
    """No answer from the registry, after every retry."""


class RegistryClient(ServiceClient):
    refused = RegistryError
    unavailable = RegistryUnavailable
    default_url = DEFAULT_URL
    url_variable = "ATOLL_REGISTRY_URL"

    @classmethod
    def token_from_env(cls) -> str | None:
        """ATOLL_REGISTRY_TOKEN (a site's), else the first admin token in ATOLL_ADMIN_TOKEN."""
        return os.environ.get("ATOLL_REGISTRY_TOKEN") or admin_token_from_env()

    # Sites

    def register_site(
        self,
        name: str,
        region: str,
        endpoint: str | None = None,
        labels: dict[str, str] | None = None,
        capabilities: dict[str, Any] | None = None,
    ) -> SiteCreated:
        """Admin only. The answer holds the site's token, which the registry never shows again."""
        body = {"name": name, "region": region, "endpoint": endpoint, "labels": labels or {}}
        if capabilities:
            body["capabilities"] = capabilities
        # Not retried once sent: a lost answer would leave a site whose token nobody has.
        return self._call(SiteCreated, "POST", "/v1/sites", json=body, idempotent=False)

    def list_sites(self, limit: int = 100, cursor: str | None = None, **filters: Any) -> SitePage:
        """Filters: region, status (live|stale|deregistered), model_signature, name."""
        params = {
            k: v for k, v in {**filters, "limit": limit, "cursor": cursor}.items() if v is not None
        }
        return self._call(SitePage, "GET", "/v1/sites", params=params)

    def iter_sites(self, **filters: Any) -> Iterator[Site]:
        cursor = None
        while True:
            page = self.list_sites(limit=500, cursor=cursor, **filters)
            yield from page.sites
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    def find_site(self, name: str) -> Site | None:
        """The registered site with this name, if any."""
        sites = self.list_sites(name=name, limit=1).sites
        return sites[0] if sites else None

    def get_site(self, site_id: UUID | str) -> Site:
        return self._call(Site, "GET", f"/v1/sites/{site_id}")

    def update_site(self, site_id: UUID | str, **fields: Any) -> Site:
        """Fields: region, endpoint (None removes it), labels, capabilities."""
        return self._call(Site, "PATCH", f"/v1/sites/{site_id}", json=fields)

    def heartbeat(self, site_id: UUID | str) -> Site:
        return self._call(Site, "POST", f"/v1/sites/{site_id}/heartbeat")

    def deregister_site(self, site_id: UUID | str) -> Site:
        return self._call(Site, "DELETE", f"/v1/sites/{site_id}")

    # Reports

    def report(
        self,
        site_id: UUID | str,
        class_priors: Sequence[float],
        accuracy: float,
        samples: int,
        model_signature: str,
        model_version: str,
        drift: bool = False,
        report_id: UUID | None = None,
    ) -> Report:
        body = {
            "id": str(report_id or uuid4()),
            "class_priors": list(class_priors),
            "accuracy": accuracy,
            "samples": samples,
            "model_signature": model_signature,
            "model_version": model_version,
            "drift": drift,
        }
        return self._call(Report, "POST", f"/v1/sites/{site_id}/reports", json=body)

    def reports(
        self, site_id: UUID | str, limit: int = 100, cursor: str | None = None
    ) -> ReportPage:
        params = {"limit": limit, **({"cursor": cursor} if cursor else {})}
        return self._call(ReportPage, "GET", f"/v1/sites/{site_id}/reports", params=params)

    def latest_report(self, site_id: UUID | str) -> Report:
        return self._call(Report, "GET", f"/v1/sites/{site_id}/reports/latest")

    # Neighbours

    def neighbours(
        self, site_id: UUID | str, k: int = 5, window_s: float | None = None
    ) -> NeighbourList:
        """Among the sites seen within `window_s` (None: the registry's liveness window)."""
        params: dict[str, float] = {"k": k, **({"window_s": window_s} if window_s else {})}
        return self._call(NeighbourList, "GET", f"/v1/sites/{site_id}/neighbours", params=params)

    def neighbours_for_priors(
        self,
        class_priors: Sequence[float],
        model_signature: str,
        k: int = 5,
        exclude: Sequence[UUID | str] = (),
    ) -> NeighbourList:
        body = {
            "class_priors": list(class_priors),
            "model_signature": model_signature,
            "k": k,
            "exclude": [str(s) for s in exclude],
        }
        return self._call(NeighbourList, "POST", "/v1/neighbours", json=body)

    # Tokens

    def create_token(self, site_id: UUID | str, revoke_others: bool = False) -> TokenCreated:
        body = {"revoke_others": revoke_others}
        path = f"/v1/sites/{site_id}/tokens"
        return self._call(TokenCreated, "POST", path, json=body, idempotent=False)

    def list_tokens(self, site_id: UUID | str) -> TokenList:
        return self._call(TokenList, "GET", f"/v1/sites/{site_id}/tokens")

    def revoke_token(self, site_id: UUID | str, token_id: str) -> TokenInfo:
        return self._call(TokenInfo, "DELETE", f"/v1/sites/{site_id}/tokens/{token_id}")

    # Models

    def record_model(
        self,
        sites: Sequence[UUID | str],
        checksum: str,
        size_bytes: int,
        uri: str,
        job: str | None = None,
        clock: int | None = None,
        model_signature: str | None = None,
        parent: UUID | str | None = None,
        model_id: UUID | None = None,
    ) -> Artifact:
        body = {
            "id": str(model_id or uuid4()),
            "sites": [str(s) for s in sites],
            "checksum": checksum,
            "size_bytes": size_bytes,
            "uri": uri,
            "job": job,
            "clock": clock,
            "model_signature": model_signature,
            "parent": str(parent) if parent else None,
        }
        return self._call(Artifact, "POST", "/v1/models", json=body)

    def get_model(self, model_id: UUID | str) -> Artifact:
        return self._call(Artifact, "GET", f"/v1/models/{model_id}")

    def list_models(
        self, limit: int = 100, cursor: str | None = None, **filters: Any
    ) -> ArtifactPage:
        """Filters: job, site."""
        params = {
            k: v for k, v in {**filters, "limit": limit, "cursor": cursor}.items() if v is not None
        }
        return self._call(ArtifactPage, "GET", "/v1/models", params=params)

    def lineage(self, model_id: UUID | str) -> Lineage:
        return self._call(Lineage, "GET", f"/v1/models/{model_id}/lineage")

    # Service

    def readiness(self) -> Readiness:
        """The /readyz answer, ready or not (a 503 here is an answer, not an error)."""
        response = self._send("GET", "/readyz", True, READINESS_RETRY_STATUSES)
        return Readiness.model_validate_json(response.content)
