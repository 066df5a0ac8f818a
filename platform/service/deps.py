"""Route dependencies both services share: the database (`app.state.database`), a
session per request, for reading or for writing, and the caller's bearer token.

They do no I/O, so they are `async def`: FastAPI runs a plain `def` one in the thread
pool, and each such hop costs more than the work (creating a session touches no
database; it connects on first use, in the route's thread).
"""

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.orm import Session

from atoll.platform.service.database import Database
from atoll.platform.service.errors import Unauthorized
from atoll.platform.service.security import bearer_token, hash_token


async def get_database(request: Request) -> Database:
    database: Database = request.app.state.database
    return database


DatabaseDep = Annotated[Database, Depends(get_database)]


async def read_session(database: DatabaseDep) -> AsyncIterator[Session]:
    with database.reading() as session:
        yield session


async def write_session(database: DatabaseDep) -> AsyncIterator[Session]:
    with database.writing() as session:
        yield session


ReadSession = Annotated[Session, Depends(read_session)]
WriteSession = Annotated[Session, Depends(write_session)]


def token_digest(request: Request, wanted: str = "token") -> str:
    """The hash of the caller's bearer token (what the services store and compare);
    Unauthorized, saying what to send, when there is none."""
    token = bearer_token(request.headers.get("authorization"))
    if token is None:
        raise Unauthorized(f"missing bearer token: send `Authorization: Bearer <{wanted}>`")
    return hash_token(token)
