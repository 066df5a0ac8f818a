"""Model artifacts: immutable records of a trained model, its sites and its parent."""

from datetime import datetime
from uuid import uuid4

from sqlalchemy import and_, or_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from atoll.platform.service.errors import Conflict, Invalid, NotFound
from atoll.platform.service.schemas import from_row
from atoll.registry.models import ArtifactSite, ModelArtifact, Site
from atoll.registry.pagination import CursorError, decode_cursor, encode_cursor
from atoll.registry.schemas import Artifact, ArtifactCreate, ArtifactFilters

MAX_LINEAGE = 1000  # ancestors returned; lineage is acyclic (a parent exists before its child)
# Stored as the client gave them; a retry must give each again, and the same parent.
_GIVEN = ("job", "clock", "checksum", "size_bytes", "uri", "model_signature")
_COMPARED = (*_GIVEN, "parent_id")


def record(
    session: Session, data: ArtifactCreate, created_by: str, now: datetime
) -> tuple[ModelArtifact, bool]:
    """Stores the artifact; returns it and whether it is new (a retry returns the stored one)."""
    site_ids = [str(s) for s in data.sites]
    if len(set(site_ids)) != len(site_ids):
        raise Invalid("lists a site more than once", "sites", "body")
    known = set(session.scalars(select(Site.id).where(Site.id.in_(site_ids))))
    for i, site_id in enumerate(site_ids):
        if site_id not in known:
            raise Invalid(f"no site {site_id}", f"sites[{i}]", "body")
    parent = str(data.parent) if data.parent else None
    if parent is not None and session.get(ModelArtifact, parent) is None:
        raise Invalid(f"no model {parent}", "parent", "body")
    artifact = ModelArtifact(
        id=str(data.id or uuid4()),
        **{f: getattr(data, f) for f in _GIVEN},
        parent_id=parent,
        created_at=now,
        created_by=created_by,
        site_links=[ArtifactSite(site_id=s) for s in sorted(site_ids)],
    )
    session.add(artifact)
    try:
        session.commit()
    except IntegrityError as e:
        session.rollback()
        return _replayed(session, artifact, e), False
    return artifact, True


def _replayed(session: Session, attempted: ModelArtifact, error: Exception) -> ModelArtifact:
    stored = session.get(ModelArtifact, attempted.id)
    if stored is None:
        raise error
    same = stored.site_ids == [link.site_id for link in attempted.site_links] and all(
        getattr(stored, f) == getattr(attempted, f) for f in _COMPARED
    )
    if not same:
        raise Conflict(
            f"model id {attempted.id} is already used by a different model", "id", "body"
        )
    return stored


def get_artifact(session: Session, artifact_id: str) -> ModelArtifact:
    artifact = session.get(ModelArtifact, artifact_id)
    if artifact is None:
        raise NotFound(f"no model {artifact_id}", "model_id", "path")
    return artifact


def list_artifacts(
    session: Session, filters: ArtifactFilters
) -> tuple[list[ModelArtifact], str | None]:
    """Newest first, one page, and the next page's cursor if there is one."""
    query = select(ModelArtifact)
    if filters.job is not None:
        query = query.where(ModelArtifact.job == filters.job)
    if filters.site is not None:
        query = query.join(ArtifactSite).where(ArtifactSite.site_id == str(filters.site))
    if filters.cursor is not None:
        try:
            at, artifact_id = decode_cursor(filters.cursor, (str, str))
            created = datetime.fromisoformat(at)
        except (CursorError, ValueError) as e:
            raise Invalid("is not a cursor this service issued", "cursor", "query") from e
        query = query.where(
            or_(
                ModelArtifact.created_at < created,
                and_(ModelArtifact.created_at == created, ModelArtifact.id < artifact_id),
            )
        )
    query = query.order_by(ModelArtifact.created_at.desc(), ModelArtifact.id.desc())
    rows = list(session.scalars(query.limit(filters.limit + 1)))
    if len(rows) <= filters.limit:
        return rows, None
    last = rows[filters.limit - 1]
    return rows[: filters.limit], encode_cursor([last.created_at.isoformat(), last.id])


def lineage(session: Session, artifact: ModelArtifact) -> list[ModelArtifact]:
    ancestors: list[ModelArtifact] = []
    current = artifact
    while current.parent_id is not None and len(ancestors) < MAX_LINEAGE:
        current = get_artifact(session, current.parent_id)
        ancestors.append(current)
    return ancestors


def artifact_out(artifact: ModelArtifact) -> Artifact:
    return from_row(Artifact, artifact, sites=artifact.site_ids, parent=artifact.parent_id)
