"""Expected failures are one line naming the cause (and never a password); the traceback
only with ``--log-level DEBUG``. The clients raise the typed error with the same message."""

from __future__ import annotations

import subprocess
import sys
import uuid

import pytest

import pqueue
from pqueue.errors import BrokerUnreachable, PQueueError, SchemaError
from tests.conftest import service_url
from tests.private_servers import free_port

APP = "pqueue.testing.faults.restart_app:router"
CLOSED = [
    ("redis://:s3cret@127.0.0.1:{port}/0", "Redis"),
    ("postgresql://u:s3cret@127.0.0.1:{port}/db", "Postgres"),
]
"""DSNs (with a password that must never show) of a closed port, and the server's name."""


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pqueue", *args], capture_output=True, text=True, timeout=60, check=False
    )


@pytest.mark.parametrize(("scheme", "name"), CLOSED)
def test_a_closed_port_is_one_line_naming_the_cause(scheme: str, name: str) -> None:
    port = free_port()
    done = _cli("worker", APP, "--dsn", scheme.format(port=port))
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"pqueue: error: {name} at 127.0.0.1:{port} is unreachable: connection refused"
    ]
    assert "s3cret" not in done.stderr + done.stdout


def test_log_level_debug_shows_the_traceback() -> None:
    done = _cli("worker", APP, "--dsn", f"redis://127.0.0.1:{free_port()}/0", "--log-level", "DEBUG")
    assert done.returncode == 1
    assert "Traceback (most recent call last)" in done.stderr
    assert done.stderr.splitlines()[-1].startswith("pqueue: error: Redis at 127.0.0.1:")


@pytest.mark.postgres
def test_a_missing_schema_is_one_line_saying_to_run_migrate() -> None:
    url = service_url("postgres")
    schema = f"pqmissing{uuid.uuid4().hex[:8]}"
    done = _cli("worker", APP, "--dsn", f"{url}?schema={schema}")
    assert done.returncode == 1
    [line] = done.stderr.splitlines()
    assert line.startswith(f"pqueue: error: pqueue schema '{schema}' is missing")
    assert f"run: pqueue migrate --dsn '{url}' --schema {schema}" in line


@pytest.mark.parametrize(("scheme", "name"), CLOSED)
def test_the_sync_client_raises_the_typed_error(scheme: str, name: str) -> None:
    port = free_port()
    with pytest.raises(BrokerUnreachable) as caught, pqueue.Client(scheme.format(port=port)) as client:
        client.stats()  # a PQueueError and a ConnectionError
    error = caught.value
    assert isinstance(error, PQueueError) and isinstance(error, ConnectionError)
    assert str(error) == f"{name} at 127.0.0.1:{port} is unreachable: connection refused"
    assert (error.address, error.cause) == (f"127.0.0.1:{port}", "connection refused")
    assert error.__cause__ is None and error.__suppress_context__  # no driver traceback chained


@pytest.mark.postgres
async def test_the_async_client_names_a_missing_schema() -> None:
    url = service_url("postgres")
    with pytest.raises(SchemaError, match="run: pqueue migrate") as caught:
        async with pqueue.AsyncClient(f"{url}?schema=pqmissing{uuid.uuid4().hex[:8]}") as client:
            await client.stats()
    assert caught.value.__cause__ is None and caught.value.__suppress_context__  # no driver traceback


def test_migrate_on_a_closed_port_is_one_line() -> None:
    port = free_port()
    done = _cli("migrate", "--dsn", f"postgresql://u:s3cret@127.0.0.1:{port}/db")
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"pqueue: error: Postgres at 127.0.0.1:{port} is unreachable: connection refused"
    ]
