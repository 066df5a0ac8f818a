"""What routes depend on, as typed aliases: settings, the service, the live hub, and the
admin check that guards every write (database sessions: atoll.platform.service.deps)."""

from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPBearer

from atoll.platform.control.core.config import ControlSettings
from atoll.platform.control.service import ControlService
from atoll.platform.service.deps import token_digest
from atoll.platform.service.errors import Unauthorized
from atoll.platform.service.live import Hub
from atoll.platform.service.security import matches_any

_bearer = HTTPBearer(auto_error=False, description="An admin token (ATOLL_ADMIN_TOKEN).")


async def get_settings(request: Request) -> ControlSettings:
    return request.app.state.settings


async def get_service(request: Request) -> ControlService:
    return request.app.state.service


async def get_hub(request: Request) -> Hub:
    return request.app.state.hub


SettingsDep = Annotated[ControlSettings, Depends(get_settings)]
ServiceDep = Annotated[ControlService, Depends(get_service)]
HubDep = Annotated[Hub, Depends(get_hub)]


async def require_admin(
    request: Request,
    settings: SettingsDep,
    _scheme: Annotated[object, Depends(_bearer)] = None,
) -> None:
    if not matches_any(token_digest(request, "admin token"), settings.admin_token_hashes):
        raise Unauthorized("not an admin token")


Admin = Depends(require_admin)
