"""``pqueue rsmq ...`` end to end: the admin commands in-process (``main(argv)``), and
``pqueue rsmq worker`` as a real process with ``--metrics-port``, drained by SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from pqueue.cli import main
from pqueue.rsmq import Rsmq
from tests.ports import free_port

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def cli(redis_url: str, ns: str, capsys: pytest.CaptureFixture[str]) -> Any:
    def run(*argv: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = main(["rsmq", *argv, "--dsn", redis_url, "--ns", ns])
        out, err = capsys.readouterr()
        return code, out, err

    return run


def test_admin_commands_with_json(cli: Any, redis_url: str, ns: str) -> None:
    assert cli("create", "jobs", "--vt", "45", "--json")[0] == 0
    code, out, _ = cli("send", "jobs", "héllo", "--json")
    sent = json.loads(out)
    assert code == 0 and len(sent["id"]) == 32
    queues = json.loads(cli("queues", "--json")[1])
    assert [(q["queue"], q["msgs"], q["vt"]) for q in queues] == [("jobs", 1, 45)]
    got = json.loads(cli("receive", "jobs", "--json")[1])
    assert (got["id"], got["message"], got["rc"]) == (sent["id"], "héllo", 1)
    assert json.loads(cli("receive", "jobs", "--json")[1]) is None
    attrs = json.loads(cli("set", "jobs", "--maxsize", "2048", "--json")[1])
    assert (attrs["maxsize"], attrs["totalrecv"], attrs["hiddenmsgs"]) == (2048, 1, 1)
    deleted = json.loads(cli("delete", "jobs", sent["id"], "--json")[1])
    assert deleted == {"queue": "jobs", "deleted": {sent["id"]: True}}
    assert json.loads(cli("dead", "jobs", "--json")[1]) == []
    assert cli("delete", "jobs", "--queue", "--yes")[0] == 0
    with Rsmq(redis_url, ns=ns) as rsmq:
        assert rsmq.list_queues() == []


def test_bad_input_is_one_line_and_exit_1(cli: Any) -> None:
    code, _, err = cli("create", "bad name")
    assert code == 1 and err.count("\n") == 1 and "queue name 'bad name'" in err
    code, _, err = cli("attrs", "nope")
    assert code == 1 and "queue 'nope' not found" in err
    cli("create", "small", "--maxsize", "1024")
    code, _, err = cli("send", "small", "x" * 1025)
    assert code == 1 and "1025 characters" in err and "1024" in err
    code, _, err = cli("delete", "small")
    assert code == 1 and "--queue" in err


def _scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
        return str(reply.read().decode())


def test_worker_process_consumes_serves_metrics_and_drains(redis_url: str, ns: str) -> None:
    port = free_port()
    with Rsmq(redis_url, ns=ns) as rsmq:
        rsmq.create_queue("jobs", vt=5)
        for body in ("a", "b", "fail"):
            rsmq.send_message("jobs", body)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
        proc = subprocess.Popen(
            [sys.executable, "-m", "pqueue", "rsmq", "worker", "tests.rsmq.handlers:record",
             "--dsn", redis_url, "--ns", ns, "--queue", "jobs", "--concurrency", "2",
             "--max-receives", "1", "--metrics-port", str(port), "--metrics-host", "127.0.0.1"],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 60
            while rsmq.get_queue_attributes("jobs").msgs or "jobs-dead" not in rsmq.list_queues():
                assert time.monotonic() < deadline and proc.poll() is None, "the worker did not consume"
                time.sleep(0.05)
            text = ""
            while 'outcome="dead"' not in text:
                assert time.monotonic() < deadline
                try:
                    text = _scrape(port)
                except OSError:
                    time.sleep(0.05)
            assert 'pqueue_jobs_processed_total{outcome="succeeded",queue="jobs",type="rsmq"} 2.0' in text
            assert 'pqueue_jobs_processed_total{outcome="dead",queue="jobs",type="rsmq"} 1.0' in text
            dead = [
                line for line in text.splitlines() if line.startswith('pqueue_queue_jobs{queue="jobs-dead"')
            ]
            assert sum(float(line.split()[-1]) for line in dead) == 1.0  # visible + hidden
        finally:
            proc.send_signal(signal.SIGTERM)
            out, _ = proc.communicate(timeout=30)
        assert proc.returncode == 0, out
        assert "drained RSMQ queue" in out
        assert [m.message for m in rsmq.list_messages("jobs-dead")] == ["fail"]
