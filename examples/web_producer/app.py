"""``POST /signups {"email": ...}``: store the user and enqueue their welcome email.

On Postgres both happen in one transaction of the request (``enqueue_in``,
docs/postgres.md): the job exists only if the user row commits. Here the job is enqueued
first and the insert can fail (the email is taken), so a refused signup rolls its job back
with it -- there is no window in which a worker sees a job for a user that does not exist,
or a user without their job. On Redis and memory, which cannot share the app's
transaction, the app keeps its users in memory and enqueues through an ``AsyncClient``.

Serve it for real with ``PQUEUE_DSN=... uvicorn examples.web_producer.app:app``.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from fastapi import FastAPI, HTTPException
from pydantic import BaseModel

import pqueue
from examples.web_producer.tasks import router

if TYPE_CHECKING:
    from pqueue.brokers.postgres import PostgresBroker

TABLE = "example_signups"
"""The app's own table. Your tables live wherever they live; the example keeps its one
table in the schema named by the DSN (pqueue's), so it needs nothing else and goes with it."""


class Signup(BaseModel):
    email: str


class Accepted(BaseModel):
    job_id: str


def create_app(dsn: str) -> FastAPI:
    """The app for the broker at ``dsn``."""
    broker = _postgres(dsn)
    users: set[str] = set()  # the user store when not on Postgres
    clients: dict[str, pqueue.AsyncClient] = {}

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if broker is not None:
            await _create_table(broker)
        async with pqueue.AsyncClient(dsn, router=router) as client:
            clients["jobs"] = client
            yield

    app = FastAPI(title="pqueue web producer example", lifespan=lifespan)

    @app.post("/signups", status_code=202)
    async def signup(body: Signup) -> Accepted:
        job_id = await (
            _signup(clients["jobs"], users, body.email)
            if broker is None
            else _signup_in_transaction(broker, body.email)
        )
        if job_id is None:
            raise HTTPException(status_code=409, detail=f"{body.email} has already signed up")
        return Accepted(job_id=job_id)

    return app


def _postgres(dsn: str) -> PostgresBroker | None:
    """On Postgres, the broker that gives the schema and connection string (it needs no open())."""
    if not dsn.startswith(("postgresql:", "postgres:")):
        return None
    from pqueue.brokers.postgres import PostgresBroker  # psycopg only when on Postgres

    return PostgresBroker.from_url(dsn)


async def _signup(client: pqueue.AsyncClient, users: set[str], email: str) -> str | None:
    if email in users:
        return None
    users.add(email)
    return (await client.enqueue("email:welcome", {"email": email})).id


async def _signup_in_transaction(broker: PostgresBroker, email: str) -> str | None:
    """Enqueue, then insert, in one transaction; a taken email rolls both back."""
    import psycopg
    from psycopg import sql

    insert = sql.SQL("INSERT INTO {} (email) VALUES (%s)").format(sql.Identifier(broker.config.schema, TABLE))
    # A connection per request keeps the example short; a real app takes one from a pool.
    async with await psycopg.AsyncConnection.connect(broker.config.conninfo) as conn:
        try:
            async with conn.transaction():
                [job] = await broker.enqueue_in(conn, [pqueue.build_spec("email:welcome", {"email": email})])
                await conn.execute(insert, (email,))
        except psycopg.errors.UniqueViolation:
            return None
    return job.id


async def _create_table(broker: PostgresBroker) -> None:
    import psycopg
    from psycopg import sql

    create = sql.SQL("CREATE TABLE IF NOT EXISTS {} (email text PRIMARY KEY)").format(
        sql.Identifier(broker.config.schema, TABLE)
    )
    async with await psycopg.AsyncConnection.connect(broker.config.conninfo, autocommit=True) as conn:
        await conn.execute(create)


app = create_app(os.environ.get("PQUEUE_DSN", "memory://"))
"""For ``uvicorn examples.web_producer.app:app`` (memory:// only serves this one process)."""
