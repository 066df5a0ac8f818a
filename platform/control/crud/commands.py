"""Commands to agents: issued here, published (again) by the dispatcher, marked applied
when their agent reports them."""

import time
from datetime import datetime
from typing import Any
from uuid import uuid4

from sqlalchemy import select
from sqlalchemy.orm import Session

from atoll.platform.bus.messages import Command as CommandMessage
from atoll.platform.bus.messages import CommandKind, StartJob
from atoll.platform.control.delivery import OPEN
from atoll.platform.control.models import Command
from atoll.platform.control.states import CommandState
from atoll.platform.service.schemas import from_row


def issue(
    session: Session,
    site: str,
    kind: CommandKind,
    now: datetime,
    job_id: str | None = None,
    payload: dict[str, Any] | None = None,
) -> Command:
    command = Command(
        id=str(uuid4()),
        site=site,
        job_id=job_id,
        kind=kind,
        payload=payload,
        state=OPEN,
        created_at=now,
        issued_at=time.time(),
        publish_count=0,
    )
    session.add(command)
    return command


def open_commands(session: Session) -> list[Command]:
    query = select(Command).where(Command.state == OPEN).order_by(Command.created_at)
    return list(session.scalars(query))


def supersede(session: Session, job_id: str, kind: CommandKind, detail: str) -> None:
    """Open commands of a kind for a job that no longer need to reach anyone."""
    query = select(Command).where(
        Command.job_id == job_id, Command.kind == kind, Command.state == OPEN
    )
    for command in session.scalars(query):
        command.state, command.detail = CommandState.superseded, detail


def list_commands(
    session: Session, site: str | None, job_id: str | None, limit: int
) -> list[Command]:
    query = select(Command).order_by(Command.created_at.desc(), Command.id).limit(limit)
    if site is not None:
        query = query.where(Command.site == site)
    if job_id is not None:
        query = query.where(Command.job_id == job_id)
    return list(session.scalars(query))


def as_message(command: Command) -> CommandMessage:
    start = StartJob.model_validate(command.payload) if command.kind == "start_job" else None
    # unsigned: the dispatcher signs it as it puts it on the bus
    return from_row(CommandMessage, command, start=start, signed_at=None, signature=None)
