"""/v1/models: model artifacts, their sites, their clock and their lineage."""

from typing import Annotated

from fastapi import APIRouter, Query, Response, status

from atoll.platform.service.deps import ReadSession, WriteSession
from atoll.platform.service.errors import Forbidden
from atoll.registry.api.deps import CallerDep, Now
from atoll.registry.api.routes import V1, ModelId, created_or_replayed, errors
from atoll.registry.crud import artifacts
from atoll.registry.schemas import Artifact, ArtifactCreate, ArtifactFilters, ArtifactPage, Lineage

router = APIRouter(prefix=f"{V1}/models", tags=["models"])


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    responses=created_or_replayed(Artifact, "model", 403, 409, 413),
    summary="Record a model artifact",
)
def record_model(
    body: ArtifactCreate, caller: CallerDep, session: WriteSession, now: Now, response: Response
) -> Artifact:
    """Admins record any artifact; a site only one trained on its own data alone
    (`sites` is just itself). Records are immutable."""
    if not caller.is_admin and [str(s) for s in body.sites] != [caller.site_id]:
        raise Forbidden(
            "a site token may record only models whose `sites` is that site alone",
            "sites",
            "body",
        )
    created_by = caller.site_id or "admin"
    artifact, created = artifacts.record(session, body, created_by, now)
    if not created:
        response.status_code = status.HTTP_200_OK
    return artifacts.artifact_out(artifact)


@router.get("", responses=errors(), summary="List model artifacts, newest first")
def list_models(
    filters: Annotated[ArtifactFilters, Query()], _caller: CallerDep, session: ReadSession
) -> ArtifactPage:
    rows, cursor = artifacts.list_artifacts(session, filters)
    return ArtifactPage(models=[artifacts.artifact_out(a) for a in rows], next_cursor=cursor)


@router.get("/{model_id}", responses=errors(404), summary="Read a model artifact")
def get_model(model_id: ModelId, _caller: CallerDep, session: ReadSession) -> Artifact:
    return artifacts.artifact_out(artifacts.get_artifact(session, str(model_id)))


@router.get("/{model_id}/lineage", responses=errors(404), summary="A model's ancestors")
def get_lineage(model_id: ModelId, _caller: CallerDep, session: ReadSession) -> Lineage:
    artifact = artifacts.get_artifact(session, str(model_id))
    ancestors = artifacts.lineage(session, artifact)
    return Lineage(model_id=model_id, ancestors=[artifacts.artifact_out(a) for a in ancestors])
