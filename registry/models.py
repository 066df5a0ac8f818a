"""The registry's tables, as SQLAlchemy 2 models. Alembic migrations in
`migrations/versions` create exactly this schema (a test compares them)."""

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Float,
    ForeignKey,
    Index,
    LargeBinary,
    MetaData,
    String,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from atoll.platform.service.sql import NAMING, UTCDateTime

ID_LENGTH = 36  # a UUID in its usual text form
NAME_LENGTH = 64
SIGNATURE_LENGTH = 128
URI_LENGTH = 2048


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)


class Site(Base):
    __tablename__ = "sites"

    id: Mapped[str] = mapped_column(String(ID_LENGTH), primary_key=True)
    name: Mapped[str] = mapped_column(String(NAME_LENGTH), index=True)
    region: Mapped[str] = mapped_column(String(NAME_LENGTH), index=True)
    endpoint: Mapped[str | None] = mapped_column(String(URI_LENGTH))
    labels: Mapped[dict[str, str]] = mapped_column(JSON)
    capabilities: Mapped[dict[str, Any]] = mapped_column(JSON)
    registered_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())
    last_seen_at: Mapped[datetime] = mapped_column(UTCDateTime())
    deregistered_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    # A copy of the latest report's model and priors: a neighbour query reads
    # only this table, however long the report history is.
    model_signature: Mapped[str | None] = mapped_column(String(SIGNATURE_LENGTH), index=True)
    model_version: Mapped[str | None] = mapped_column(String(NAME_LENGTH))
    latest_priors: Mapped[bytes | None] = mapped_column(LargeBinary)
    reports_total: Mapped[int] = mapped_column(BigInteger, default=0)

    __table_args__ = (
        # Names are unique among registered sites; a deregistered site's name may be reused.
        Index(
            "uq_sites_name_registered",
            "name",
            unique=True,
            sqlite_where=deregistered_at.is_(None),
            postgresql_where=deregistered_at.is_(None),
        ),
        # No index on last_seen_at: each report updates it, and PostgreSQL updates a row
        # in place (HOT) only when no indexed column changes (migration 0002).
        {"postgresql_with": {"fillfactor": 70}},
    )


class SiteToken(Base):
    __tablename__ = "site_tokens"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    site_id: Mapped[str] = mapped_column(ForeignKey("sites.id", ondelete="CASCADE"), index=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    hint: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime())


class Report(Base):
    __tablename__ = "reports"

    id: Mapped[str] = mapped_column(String(ID_LENGTH), primary_key=True)
    site_id: Mapped[str] = mapped_column(ForeignKey("sites.id", ondelete="CASCADE"))
    seq: Mapped[int] = mapped_column(BigInteger)  # 1, 2, ... per site, in arrival order
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    class_priors: Mapped[list[float]] = mapped_column(JSON)
    accuracy: Mapped[float] = mapped_column(Float)
    samples: Mapped[int] = mapped_column(BigInteger)
    model_signature: Mapped[str] = mapped_column(String(SIGNATURE_LENGTH))
    model_version: Mapped[str] = mapped_column(String(NAME_LENGTH))
    drift: Mapped[bool] = mapped_column(Boolean)

    __table_args__ = (UniqueConstraint("site_id", "seq"),)


class ArtifactSite(Base):
    __tablename__ = "artifact_sites"

    artifact_id: Mapped[str] = mapped_column(
        ForeignKey("model_artifacts.id", ondelete="CASCADE"), primary_key=True
    )
    site_id: Mapped[str] = mapped_column(ForeignKey("sites.id"), primary_key=True, index=True)


class ModelArtifact(Base):
    __tablename__ = "model_artifacts"

    id: Mapped[str] = mapped_column(String(ID_LENGTH), primary_key=True)
    job: Mapped[str | None] = mapped_column(String(NAME_LENGTH * 2), index=True)
    clock: Mapped[int | None] = mapped_column(BigInteger)
    checksum: Mapped[str] = mapped_column(String(160))
    size_bytes: Mapped[int] = mapped_column(BigInteger)
    uri: Mapped[str] = mapped_column(String(URI_LENGTH))
    model_signature: Mapped[str | None] = mapped_column(String(SIGNATURE_LENGTH))
    parent_id: Mapped[str | None] = mapped_column(ForeignKey("model_artifacts.id"), index=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), index=True)
    created_by: Mapped[str] = mapped_column(String(ID_LENGTH))  # "admin" or the site's id

    site_links: Mapped[list[ArtifactSite]] = relationship(
        lazy="selectin", cascade="all, delete-orphan", order_by=ArtifactSite.site_id
    )

    @property
    def site_ids(self) -> list[str]:
        return [link.site_id for link in self.site_links]
