"""Request bodies over the size limit are refused with 413 before they are parsed."""

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from atoll.platform.service.errors import error_response
from atoll.platform.service.schemas import Problem


class BodyTooLarge(HTTPException):
    # An HTTPException, so that FastAPI passes it on while reading the body rather
    # than turning it into a 400.
    def __init__(self, limit: int) -> None:
        super().__init__(413, f"the request body is larger than {limit} bytes")


class BodyLimit:
    """Checks Content-Length up front and counts the bytes of chunked bodies as they arrive."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            problem = Problem(
                field="body",
                location="body",
                problem=f"the request body is larger than {self.max_bytes} bytes",
            )
            await error_response(413, problem.problem, [problem])(scope, receive, send)
            return
        received = 0

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise BodyTooLarge(self.max_bytes)
            return message

        await self.app(scope, counted, send)
