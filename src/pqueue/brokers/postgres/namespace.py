"""A Postgres namespace: a schema (``?schema=<name>``), made by migrating it and dropped
by ``DROP SCHEMA <name> CASCADE`` -- that schema only, on the DSN's database."""

from __future__ import annotations

from dataclasses import dataclass

import psycopg
from psycopg import sql

from pqueue.brokers.namespaces import valid_name, with_parameter
from pqueue.brokers.postgres.config import PostgresConfig
from pqueue.brokers.postgres.connection import connection_kwargs, translated
from pqueue.brokers.postgres.migrate import migrate_async


@dataclass(frozen=True, slots=True)
class PostgresNamespace:
    """The schema ``name`` in the database of a Postgres DSN."""

    name: str
    dsn: str

    async def create(self) -> None:
        """Create the schema and bring it up to date (``pqueue migrate``)."""
        await migrate_async(self.dsn)

    async def drop(self) -> None:
        """``DROP SCHEMA IF EXISTS <name> CASCADE``: its tables, sequences and functions."""
        config = PostgresConfig.from_url(self.dsn)
        statement = sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(config.schema))
        with translated(config.schema, config.redacted):
            conn = await psycopg.AsyncConnection.connect(config.conninfo, **connection_kwargs(config))
            async with conn:
                await conn.execute(statement)


def namespace(dsn: str, name: str) -> PostgresNamespace:
    """``dsn`` with ``?schema=<name>`` in place of any schema (the DSN is checked here)."""
    namespaced = with_parameter(dsn, "schema", valid_name(name))
    PostgresConfig.from_url(namespaced)
    return PostgresNamespace(name, namespaced)
