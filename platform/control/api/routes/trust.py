"""Site identities: an operator issues a site's enrolment token and revokes it; the
site's agent enrols with the token (the token is its only credential here)."""

import re

from fastapi import APIRouter, Response, status

from atoll.platform.control.api.deps import Admin, ServiceDep
from atoll.platform.control.api.routes import V1, errors
from atoll.platform.control.crud import identities
from atoll.platform.control.crud import sites as site_store
from atoll.platform.control.schemas import EnrolOut, EnrolRequest, EnrolTokenOut, RevokeOut
from atoll.platform.service.deps import ReadSession, WriteSession
from atoll.platform.service.errors import Invalid
from atoll.platform.service.sql import utcnow

router = APIRouter(prefix=V1, tags=["trust"])
_NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"


@router.post(
    "/sites/{name}/token",
    status_code=status.HTTP_201_CREATED,
    dependencies=[Admin],
    responses=errors(),
    summary="A one-time enrolment token for a site",
)
def issue_token(name: str, session: WriteSession) -> EnrolTokenOut:
    """Declares the site if it is not known; an unused earlier token stops working. The
    token is shown only in this answer."""
    if len(name) > 64 or not re.match(_NAME, name):
        raise Invalid("is not a site name (letters, digits, . _ -; at most 64)", "name", "path")
    site_store.declare(session, name, None, utcnow())
    token = identities.issue_token(session, name, utcnow())
    session.commit()
    return EnrolTokenOut(site=name, token=token)


@router.post(
    "/enrol",
    responses=errors(401, 422, 503),
    summary="A site's agent enrols: its certificate for its own key",
)
def enrol(body: EnrolRequest, session: WriteSession, service: ServiceDep) -> EnrolOut:
    """Needs no admin token: the one-time enrolment token is the credential. 401 when it
    is unknown or used, and nothing is created."""
    return service.enrolment.enrol(session, body.token, body.csr, body.hosts)


@router.post(
    "/sites/{name}/revoke",
    dependencies=[Admin],
    responses=errors(),
    summary="Revoke a site: every peer refuses its certificate from the next handshake",
)
def revoke(name: str, session: WriteSession, service: ServiceDep) -> RevokeOut:
    return RevokeOut(site=name, certificates=service.enrolment.revoke(session, name))


@router.get("/crl", responses=errors(), summary="The CA's revocation list (PEM)")
def crl(session: ReadSession, service: ServiceDep) -> Response:
    ca = service.enrolment.authority
    if ca is None:
        return Response(status_code=status.HTTP_404_NOT_FOUND)
    return Response(ca.crl(identities.revoked(session)), media_type="application/pkix-crl")
