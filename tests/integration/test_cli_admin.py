"""The admin CLI end to end, once per backend: each command's answer, and bad input refused.

memory:// lives in one process, so its commands run in-process through ``main(argv)``;
Redis and Postgres commands run as real ``python -m pqueue`` processes. Every test has
its own namespace (memory store, key prefix, schema), removed afterwards.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import ModuleType

import pytest

import pqueue
from pqueue.broker import WorkerInfo
from pqueue.cli import main
from pqueue.job import ErrorInfo, JobStatus
from pqueue.spec import build_spec
from tests.conftest import only_backends, service_url


@dataclass
class Ran:
    code: int
    out: str
    err: str


Cli = Callable[..., Ran]


@pytest.fixture
def cli(
    backend: ModuleType, backend_dsn: str, namespace: str, request: pytest.FixtureRequest
) -> Iterator[Cli]:
    """Run ``pqueue <argv>`` on this test's namespace (``--dsn`` added unless given)."""
    capsys: pytest.CaptureFixture[str] = request.getfixturevalue("capsys")
    monkeypatch: pytest.MonkeyPatch = request.getfixturevalue("monkeypatch")

    def run(*argv: str, dsn: str | None = backend_dsn, stdin: str = "") -> Ran:
        args = [*argv, *(["--dsn", dsn] if dsn is not None else [])]
        if backend.NAME == "memory":
            monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
            capsys.readouterr()
            code = main(args)
            captured = capsys.readouterr()
            return Ran(code, captured.out, captured.err)
        env = {k: v for k, v in os.environ.items() if k != "PQUEUE_DSN"}
        done = subprocess.run(
            [sys.executable, "-m", "pqueue", *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
            check=False,
        )
        return Ran(done.returncode, done.stdout, done.stderr)

    yield run
    asyncio.run(backend.cleanup(service_url(backend.SERVICE), namespace))


def broker_call(dsn: str, work: Callable[[pqueue.FullBroker], object]) -> object:
    """Run ``await work(broker)`` on a fresh broker of ``dsn`` (to arrange jobs directly)."""

    async def go() -> object:
        broker = pqueue.connect(dsn)
        await broker.open()
        try:
            return await work(broker)  # type: ignore[misc]
        finally:
            await broker.close()

    return asyncio.run(go())


def make_dead(dsn: str, n: int, queue: str = "default") -> list[str]:
    """Enqueue ``n`` jobs in ``queue`` and fail each for good, with a traceback."""

    async def work(broker: pqueue.FullBroker) -> list[str]:
        specs = [build_spec("mail:send", {"n": i}, queue=queue, max_retries=0) for i in range(n)]
        ids = [r.id for r in await broker.enqueue(specs)]
        leases = await broker.claim([queue], worker_id="w", limit=n, lease_for=30)
        boom = ErrorInfo("ValueError", "bad address", traceback="Traceback (most recent call last):\n  boom")
        for lease in leases:
            assert await broker.fail(lease, boom, retry_in=None)
        return ids

    return broker_call(dsn, work)  # type: ignore[return-value]


def status_of(dsn: str, job_id: str) -> JobStatus:
    with pqueue.Client(dsn) as client:
        return client.get_job(job_id).status


def counts(dsn: str) -> dict[str, dict[str, int]]:
    with pqueue.Client(dsn) as client:
        return client.stats().to_dict()["queues"]  # type: ignore[no-any-return]


def test_enqueue_then_show_list_and_cancel(cli: Cli, backend_dsn: str) -> None:
    ran = cli(
        "enqueue", "mail:send", "--payload", '{"to": "ada@example.com"}', "--queue", "emails", "--delay", "1h"
    )
    assert ran.code == 0, ran.err
    job_id = ran.out.strip()
    shown = json.loads(cli("jobs", "show", job_id, "--json").out)
    assert shown["payload"] == {"to": "ada@example.com"} and shown["status"] == "scheduled"
    assert shown["queue"] == "emails" and shown["run_at"] > shown["created_at"]
    listed = json.loads(cli("jobs", "list", "--type", "mail:send", "--json").out)
    assert [job["id"] for job in listed["jobs"]] == [job_id] and listed["more"] is False
    assert json.loads(cli("jobs", "list", "--type", "other:type", "--json").out)["jobs"] == []
    table = cli("jobs", "list", "--queue", "emails")
    assert table.code == 0 and job_id in table.out and "mail:send" in table.out
    cancelled = cli("cancel", job_id)
    assert cancelled.code == 0 and cancelled.out.strip() == f"cancelled {job_id}"
    assert status_of(backend_dsn, job_id) is JobStatus.CANCELLED
    again = cli("cancel", job_id, "--json")
    assert again.code == 1 and json.loads(again.out)["not_cancelled"] == [
        {"id": job_id, "status": "cancelled"}
    ]


def test_enqueue_reads_the_payload_file_and_options(cli: Cli, tmp_path: pytest.TempPathFactory) -> None:
    payload = tmp_path / "payload.json"  # type: ignore[operator]
    payload.write_text('{"report": [1, 2, 3]}')
    ran = cli(
        "enqueue", "report:build", "--payload-file", str(payload), "--run-at", "2030-01-01T00:00:00Z",
        "--max-retries", "7", "--unique-for", "10m", "--unique-key", "nightly", "--idempotency-key", "r-1",
        "--priority", "-12", "--json",
    )  # fmt: skip
    assert ran.code == 0, ran.err
    first = json.loads(ran.out)
    job = json.loads(cli("jobs", "show", first["id"], "--json").out)
    assert job["payload"] == {"report": [1, 2, 3]} and job["max_retries"] == 7
    assert job["run_at"] == "2030-01-01T00:00:00+00:00" and job["unique_key"] == "nightly"
    assert job["idempotency_key"] == "r-1" and job["priority"] == -12
    shown = cli("jobs", "show", first["id"])
    assert "priority" in shown.out and "-12" in shown.out
    twin = cli("enqueue", "report:build", "--unique-for", "10m", "--unique-key", "nightly", "--json")
    assert json.loads(twin.out) == {"id": first["id"], "created": False}


def test_enqueue_takes_a_timeout_limits_and_parents(cli: Cli) -> None:
    ran = cli(
        "enqueue", "report:export", "--limit-key", "acme", "--concurrency", "2", "--rate", "20/s",
        "--timeout", "90s", "--json",
    )  # fmt: skip
    assert ran.code == 0, ran.err
    parent = json.loads(ran.out)["id"]
    job = json.loads(cli("jobs", "show", parent, "--json").out)
    assert (job["limit_key"], job["timeout"]) == ("acme", 90.0)
    child = cli("enqueue", "report:mail", "--depends-on", parent, "--on-parent-failure", "run", "--json")
    assert child.code == 0, child.err
    shown = json.loads(cli("jobs", "show", json.loads(child.out)["id"], "--json").out)
    assert (shown["status"], shown["depends_on"]) == ("waiting", [parent])
    missing = "01a21846-6f63-71c7-8a07-71f988ac91fe"
    refused = cli("enqueue", "report:mail", "--depends-on", missing)
    assert refused.code == 1 and missing in refused.err and "nothing was stored" in refused.err
    bad = cli("enqueue", "report:export", "--limit-key", "acme", "--concurrency", "two")
    assert bad.code != 0 and "--concurrency" in bad.err


def test_enqueue_takes_an_id_tags_and_a_recovery_budget(cli: Cli) -> None:
    job_id = "01a21846-6f63-71c7-8a07-71f988ac91fe"
    ran = cli(
        "enqueue", "report:build", "--job-id", job_id, "--meta", "trace=t-1", "--meta", "team=ops",
        "--max-recoveries", "2", "--json",
    )  # fmt: skip
    assert ran.code == 0, ran.err
    assert json.loads(ran.out) == {"id": job_id, "created": True}
    job = json.loads(cli("jobs", "show", job_id, "--json").out)
    assert (job["meta"], job["max_recoveries"]) == ({"trace": "t-1", "team": "ops"}, 2)
    again = cli("enqueue", "report:build", "--job-id", job_id, "--json")
    assert json.loads(again.out) == {"id": job_id, "created": False}
    bad = cli("enqueue", "report:build", "--meta", "trace")
    assert bad.code != 0 and "--meta takes KEY=VALUE" in bad.err


def test_stats_table_json_and_one_queue(cli: Cli, backend_dsn: str) -> None:
    for _ in range(2):
        assert cli("enqueue", "mail:send", "--queue", "emails").code == 0
    dropped = json.loads(cli("enqueue", "mail:send", "--queue", "emails", "--json").out)["id"]
    assert cli("cancel", dropped).code == 0
    make_dead(backend_dsn, 1, queue="reports")
    data = json.loads(cli("stats", "--json").out)
    assert data["queues"]["emails"]["pending"] == 2 and data["queues"]["reports"]["dead"] == 1
    assert data["queues"]["emails"]["cancelled"] == 1
    assert set(data["oldest_pending_age"]) == {"emails"} and data["oldest_pending_age"]["emails"] >= 0
    assert data["done_per_second"]["reports"] == pytest.approx(1 / 60)
    assert data["totals"]["pending"] == 2 and data["workers"] == []
    one = json.loads(cli("stats", "--queue", "emails", "--json").out)
    assert list(one["queues"]) == ["emails"]
    table = cli("stats")
    assert table.code == 0 and "emails" in table.out and "oldest pending" in table.out
    assert "JobStatus" not in table.out and "live workers: 0" in table.out
    header = next(line for line in table.out.splitlines() if "queue" in line)
    emails = next(line for line in table.out.splitlines() if "emails" in line)
    cells = dict(zip(header.split("┃")[1:-1], emails.split("│")[1:-1], strict=True))
    assert {name.strip(): cell.strip() for name, cell in cells.items()}["cancelled"] == "1"


def test_workers_and_health(cli: Cli, backend_dsn: str) -> None:
    info = WorkerInfo("w-cli", "box-1", 4242, ("emails", "default"), 8, started_at=1_800_000_000.0)
    broker_call(backend_dsn, lambda broker: broker.register_worker(info, ttl=60))
    workers = json.loads(cli("workers", "--json").out)["workers"]
    assert [(w["id"], w["host"], w["pid"], w["queues"], w["concurrency"]) for w in workers] == [
        ("w-cli", "box-1", 4242, ["emails", "default"], 8)
    ]
    assert workers[0]["started_at"] == "2027-01-15T08:00:00+00:00"
    table = cli("workers")
    assert table.code == 0 and "w-cli" in table.out and "emails, default" in table.out
    health = cli("health")
    assert health.code == 0 and health.out.startswith("ok: ") and health.err == ""
    assert json.loads(cli("health", "--json").out)["ok"] is True


def test_dlq_list_show_requeue_and_purge(cli: Cli, backend_dsn: str) -> None:
    dead = make_dead(backend_dsn, 3, queue="emails")
    other = make_dead(backend_dsn, 2, queue="reports")
    listed = json.loads(cli("dlq", "list", "--queue", "emails", "--json").out)
    assert sorted(job["id"] for job in listed["jobs"]) == sorted(dead)
    assert listed["jobs"][0]["errors"][-1]["kind"] == "ValueError"
    shown = cli("jobs", "show", dead[0])
    assert "last error" in shown.out and "bad address" in shown.out and "Traceback" in shown.out
    assert cli("dlq", "requeue", dead[0]).out.strip() == "requeued 1 job"
    assert status_of(backend_dsn, dead[0]) is JobStatus.PENDING
    assert json.loads(cli("dlq", "requeue", "--all", "--queue", "emails", "--json").out) == {"requeued": 2}
    refused = cli("dlq", "purge")  # stdin is not a terminal
    assert refused.code == 1 and "--yes" in refused.err and refused.out == ""
    assert json.loads(cli("dlq", "purge", "--yes", "--older-than", "1h", "--json").out) == {"purged": 0}
    assert cli("dlq", "purge", "--yes").out.strip() == "purged 2 jobs"
    assert counts(backend_dsn)["reports"]["dead"] == 0 and other


def test_import_pqueue_and_the_parser_leave_rich_alone() -> None:
    code = "import sys, pqueue, pqueue.cli; pqueue.cli.build_parser(); sys.exit('rich' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def test_every_command_has_help_with_examples(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["stats"], ["jobs", "list"], ["jobs", "show"], ["enqueue"], ["dlq", "list"],
                 ["dlq", "requeue"], ["dlq", "purge"], ["cancel"], ["workers"], ["health"],
                 ["pause"], ["resume"]):  # fmt: skip
        with pytest.raises(SystemExit) as exited:
            main([*argv, "--help"])
        assert exited.value.code == 0
        text = capsys.readouterr().out
        assert "examples:\n  pqueue " in text and "--dsn" in text and "--json" in text, argv


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


UNKNOWN_ID = "0190f6d2-8c3e-7b1a-9f00-3c5d2e1a4b77"
BAD_INPUT = {
    "malformed JSON": (["enqueue", "mail:send", "--payload", "{not json"], "not valid JSON"),
    "malformed JSON file": (["enqueue", "mail:send", "--payload-file", "-"], "not valid JSON"),
    "bad queue name (enqueue)": (["enqueue", "mail:send", "--queue", "no spaces"], "invalid queue name"),
    "bad queue name (stats)": (["stats", "--queue", "{x}"], "invalid queue name"),
    "bad queue name (jobs)": (["jobs", "list", "--queue", "a b"], "invalid queue name"),
    "bad queue name (dlq)": (["dlq", "requeue", "--all", "--queue", "a:b"], "invalid queue name"),
    "unknown id (show)": (["jobs", "show", UNKNOWN_ID], "no job with id"),
    "unknown id (cancel)": (["cancel", UNKNOWN_ID], "no job with id"),
    "unknown id (requeue)": (["dlq", "requeue", UNKNOWN_ID], "no job with id"),
    "not an id": (["jobs", "show", "42"], "not a job id"),
    "bad duration": (["dlq", "purge", "--older-than", "7 weeks", "--yes"], "invalid duration"),
    "bad run-at": (["enqueue", "mail:send", "--run-at", "2030-01-01 00:00"], "no time zone"),
    "bad limit": (["jobs", "list", "--limit", "0"], "--limit"),
}


@pytest.mark.parametrize("case", list(BAD_INPUT), ids=list(BAD_INPUT))
def test_bad_input_is_one_line_on_stderr_and_writes_nothing(cli: Cli, backend_dsn: str, case: str) -> None:
    seeded = cli("enqueue", "mail:send", "--queue", "emails").out.strip()
    before = counts(backend_dsn)
    argv, problem = BAD_INPUT[case]
    ran = cli(*argv, stdin="{not json")
    assert ran.code != 0 and ran.out == ""
    assert ran.err.count("\n") == 1 and ran.err.startswith("pqueue: error: ") and problem in ran.err, ran.err
    assert counts(backend_dsn) == before and status_of(backend_dsn, seeded) is JobStatus.PENDING


def test_a_bad_dsn_is_one_line(cli: Cli) -> None:
    for dsn, problem in (("nonsense", "invalid DSN"), ("ftp://host/x", "ftp")):
        ran = cli("stats", dsn=dsn)
        assert ran.code == 1 and ran.out == "" and ran.err.count("\n") == 1 and problem in ran.err


@pytest.mark.parametrize("command", [["stats"], ["health"], ["enqueue", "mail:send"], ["workers"]])
def test_an_unreachable_broker_is_one_line(cli: Cli, backend_name: str, command: list[str]) -> None:
    if backend_name == "memory":
        dsn = f"redis://127.0.0.1:{closed_port()}/0?retries=0"  # memory is never unreachable
    elif backend_name == "redis":
        dsn = f"redis://127.0.0.1:{closed_port()}/0?retries=0"
    else:
        dsn = f"postgresql://postgres@127.0.0.1:{closed_port()}/test?pool_timeout=1"
    ran = cli(*command, dsn=dsn)
    assert ran.code == 1 and ran.out == "" and ran.err.count("\n") == 1
    assert "unreachable" in ran.err or "unavailable" in ran.err, ran.err


@only_backends("postgres")
def test_health_fails_in_one_line_on_a_schema_never_migrated(cli: Cli, backend_dsn: str) -> None:
    bare = backend_dsn.replace("schema=", "schema=bare_")  # never migrated, so never created
    ran = cli("health", dsn=bare)
    assert ran.code == 1 and ran.out == "" and ran.err.count("\n") == 1
    assert "missing or incomplete" in ran.err and "pqueue migrate" in ran.err, ran.err


def test_pause_and_resume_queues_and_stats_marks_them(cli: Cli, backend_dsn: str) -> None:
    paused = cli("pause", "emails", "reports")
    assert paused.code == 0 and paused.out.splitlines() == ["paused emails", "paused reports"]
    again = json.loads(cli("pause", "emails", "--json").out)
    assert again == {"paused": [], "unchanged": ["emails"], "paused_queues": ["emails", "reports"]}
    assert cli("enqueue", "mail:send", "--queue", "emails").code == 0  # enqueues go on
    stats = cli("stats", "--json")
    assert json.loads(stats.out)["paused"] == ["emails", "reports"]
    assert "emails (paused)" in cli("stats").out
    resumed = cli("resume", "emails", "--json")
    assert json.loads(resumed.out) == {"resumed": ["emails"], "unchanged": [], "paused_queues": ["reports"]}
    assert cli("resume", "emails").out.strip() == "emails was already resumed"
    bad = cli("pause", "ok", "not ok")
    assert bad.code == 1 and "invalid queue name" in bad.err
    assert json.loads(cli("stats", "--json").out)["paused"] == ["reports"]  # nothing changed
