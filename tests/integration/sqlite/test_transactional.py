"""Transactional enqueue on SQLite: with the application's own sqlite3 connection and with a
SQLAlchemy session, the job commits or rolls back with the application's writes."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.orm import Session

import pqueue
from pqueue.brokers.sqlite import enqueue_in, migrate
from pqueue.errors import JobNotFound
from pqueue.job import JobSpec
from pqueue.spec import build_spec


def _spec(n: int) -> JobSpec:
    return build_spec("orders:ship", {"order": n})


@pytest.fixture
def dsn(tmp_path: Path) -> str:
    dsn = f"sqlite:///{tmp_path}/app.db"
    migrate(dsn)
    with sqlite3.connect(tmp_path / "app.db") as conn:
        conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY)")
    return dsn


async def _exists(dsn: str, job_id: str) -> bool:
    async with pqueue.connect(dsn) as broker:
        try:
            await broker.get_job(job_id)
        except JobNotFound:
            return False
        return True


async def test_with_the_apps_own_sqlite3_connection(dsn: str) -> None:
    conn = sqlite3.connect(dsn.removeprefix("sqlite:///"))
    conn.execute("INSERT INTO orders (id) VALUES (1)")
    [kept] = enqueue_in(conn, [_spec(1)])
    conn.commit()
    conn.execute("INSERT INTO orders (id) VALUES (2)")
    [dropped] = enqueue_in(conn, [_spec(2)])
    conn.rollback()
    assert [row[0] for row in conn.execute("SELECT id FROM orders")] == [1]
    conn.close()
    assert kept.created and await _exists(dsn, kept.id)
    assert dropped.created and not await _exists(dsn, dropped.id)


async def test_with_a_sqlalchemy_session(dsn: str) -> None:
    engine = create_engine(dsn)
    with Session(engine) as session, session.begin():
        session.execute(text("INSERT INTO orders (id) VALUES (1)"))
        [kept] = enqueue_in(session, [_spec(1)])
    with Session(engine) as session:
        session.begin()
        session.execute(text("INSERT INTO orders (id) VALUES (2)"))
        [dropped] = enqueue_in(session, [_spec(2)])
        session.rollback()
    engine.dispose()
    assert await _exists(dsn, kept.id)
    assert not await _exists(dsn, dropped.id)
