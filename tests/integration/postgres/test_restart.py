"""Postgres restarts under real worker processes: nothing lost, no worker dies, and after
a graceful restart nothing runs twice. A throwaway cluster (initdb/pg_ctl, run as the
``postgres`` OS user) is stopped (``-m fast``) or crashed (``-m immediate``) twice for
about a second while two ``pqueue worker`` processes (lease 3 s) drain 600 jobs; see
tests/restart_scenario.py. Resume times are measured by bench/restarts.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import restart_scenario
from tests.conftest import missing
from tests.private_servers import PrivatePostgres
from tests.restart_checks import check

pytestmark = [pytest.mark.slow, pytest.mark.postgres]


@pytest.fixture
def private_postgres() -> Iterator[PrivatePostgres]:
    """A throwaway Postgres cluster with pqueue's schema, removed afterwards."""
    problem = PrivatePostgres.missing()
    if problem is not None:
        missing("postgres", f"{problem}: Postgres restart tests cannot run")
    server = PrivatePostgres()
    try:
        server.start()
        restart_scenario.migrate(server.url)
        yield server
    finally:
        server.remove()


@pytest.mark.parametrize("mode", ["graceful", "crash"])
async def test_workers_ride_out_postgres_restarts(
    private_postgres: PrivatePostgres, tmp_path: Path, mode: restart_scenario.Mode
) -> None:
    plan = restart_scenario.Plan(mode=mode)
    outcome = await restart_scenario.run(plan, private_postgres, private_postgres.url, tmp_path)
    check(outcome, plan)
