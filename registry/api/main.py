"""All /v1 routes in one router."""

from fastapi import APIRouter, Depends, Request

from atoll.platform.service.errors import Invalid
from atoll.registry.api.routes import artifacts, neighbours, reports, sites, tokens


async def single_valued_query(request: Request) -> None:
    """No query parameter of this API is a list: `?region=a&region=b` is a mistake to
    report, not a choice of the last one."""
    seen = set()
    for key, _ in request.query_params.multi_items():
        if key in seen:
            raise Invalid("is given more than once", key, "query")
        seen.add(key)


api_router = APIRouter(dependencies=[Depends(single_valued_query)])
for module in (sites, reports, neighbours, tokens, artifacts):
    api_router.include_router(module.router)
