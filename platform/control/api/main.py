"""All /v1 routes in one router."""

from fastapi import APIRouter

from atoll.platform.control.api.routes import events, jobs, sites, trust

api_router = APIRouter()
for router in (jobs.router, jobs.commands_router, sites.router, events.router, trust.router):
    api_router.include_router(router)
