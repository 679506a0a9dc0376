"""An outage is worth two log lines, whoever notices it and however often; causes are short."""

from __future__ import annotations

import logging
import threading
import time

import pytest

from pqueue.brokers.health import ServerHealth, describe, failure_message, health_of


def test_an_outage_logs_one_warning_with_its_cause_and_one_info_with_its_length(
    caplog: pytest.LogCaptureFixture,
) -> None:
    health = ServerHealth("Redis at 127.0.0.1:1")
    with caplog.at_level(logging.DEBUG, logger="pqueue.broker"):
        health.ok()  # up: nothing to say
        threads = [threading.Thread(target=health.lost, args=("connection refused",)) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        health.lost("timeout")  # still the same outage
        health.ok()
        health.ok()
    records = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert len(records) == 2
    assert records[0] == (
        "WARNING",
        "lost Redis at 127.0.0.1:1 (connection refused); retrying until it is back",
    )
    assert records[1][0] == "INFO"
    assert records[1][1].startswith("Redis at 127.0.0.1:1 is back after ")
    assert records[1][1].endswith("s (it was gone: connection refused)")


def test_a_reply_to_a_command_sent_before_the_outage_does_not_end_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A stopping server finishes a statement while it closes the other connections: that
    reply must not log "back", or the next refusal logs the same outage a second time
    (seen as three WARNINGs for two Postgres restarts)."""
    health = ServerHealth("Postgres at 127.0.0.1:1")
    sent_before = time.monotonic()
    with caplog.at_level(logging.DEBUG, logger="pqueue.broker"):
        health.lost("server closed the connection")
        health.ok(sent_before)  # in flight when the server went: says nothing
        health.lost("connection refused")  # the same outage
        assert health.down
        health.ok(time.monotonic())  # sent after the outage was noticed: the server is back
    levels = [r.levelname for r in caplog.records]
    assert levels == ["WARNING", "INFO"]
    assert not health.down


def test_every_broker_of_a_process_shares_one_health_per_server() -> None:
    assert health_of("Postgres at h:1") is health_of("Postgres at h:1")
    assert health_of("Postgres at h:1") is not health_of("Postgres at h:2")


@pytest.mark.parametrize(
    ("error", "cause"),
    [
        (ConnectionRefusedError(111, "Connection refused"), "connection refused"),
        (
            OSError('connection to server at "127.0.0.1", port 9 failed: Connection refused\n\tIs it up?'),
            "connection refused",
        ),
        (
            OSError('FATAL:  password authentication failed for user "app"'),
            "authentication failed for role 'app'",
        ),
        (
            OSError('connection to server at "h", port 5432 failed: FATAL:  role "app" does not exist'),
            "authentication failed for role 'app'",
        ),
        (
            OSError(
                'connection failed: connection to server at "127.0.0.1", port 5432 failed: '
                "server does not support SSL, but SSL was required"
            ),
            "TLS handshake failed: is this port TLS? (the server does not support SSL)",
        ),
        (OSError("WRONGPASS invalid username-password pair or user is disabled."), "authentication failed"),
        (TimeoutError(), "timeout"),
        (OSError("Timeout connecting to server"), "timeout"),
        (
            OSError("[SSL: WRONG_VERSION_NUMBER] wrong version number (_ssl.c:1000)"),
            "TLS: [SSL: WRONG_VERSION_NUMBER] wrong version number (_ssl.c:1000)",
        ),
        (OSError('FATAL:  database "nope" does not exist'), 'database "nope" does not exist'),
        (
            OSError("Error 111 connecting to 127.0.0.1:6379. Connect call failed ('127.0.0.1', 6379)."),
            "connection refused",
        ),
        (OSError("Error 113 connecting to 10.0.0.9:6379. No route to host."), "no route to host"),
        (OSError("something new\nsecond line"), "something new"),
    ],
)
def test_describe_names_the_cause_in_a_few_words(error: BaseException, cause: str) -> None:
    assert describe(error) == cause


@pytest.mark.parametrize(
    ("cause", "message"),
    [
        ("connection refused", "Postgres at h:1 is unreachable: connection refused"),
        ("timeout", "Postgres at h:1 is unreachable: timeout"),
        (
            "authentication failed for role 'app'",
            "Postgres at h:1 refused: authentication failed for role 'app'",
        ),
        ("authentication required", "Postgres at h:1 refused: authentication required"),
        ('database "x" does not exist', 'Postgres at h:1 refused: database "x" does not exist'),
        (
            "TLS handshake failed: is this port TLS? (no)",
            "Postgres at h:1: TLS handshake failed: is this port TLS? (no)",
        ),
    ],
)
def test_a_server_that_answered_refused_and_only_a_silent_one_is_unreachable(
    cause: str, message: str
) -> None:
    assert failure_message("Postgres at h:1", cause) == message


def test_psycopg_pool_chatter_is_folded_into_debug(caplog: pytest.LogCaptureFixture) -> None:
    from pqueue.logs import demote

    pool_log = logging.getLogger("psycopg.pool")
    demote("psycopg.pool")
    demote("psycopg.pool")  # once only
    assert sum(type(f).__name__ == "Demote" for f in pool_log.filters) == 1
    with caplog.at_level(logging.INFO, logger="psycopg.pool"):
        pool_log.warning("error connecting in %r: %s", "pqueue/x", "connection refused")
        pool_log.error("a real error stays")
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [("ERROR", "a real error stays")]
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="psycopg.pool"):
        pool_log.warning("error connecting in %r: %s", "pqueue/x", "connection refused")
    assert [r.levelname for r in caplog.records] == ["DEBUG"]


def test_a_failure_just_after_an_outage_ended_is_its_tail_unless_it_lasts(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A Redis Cluster master that came back answers CLUSTERDOWN for a moment while it
    rejoins: seen as 'back' then 'lost (The cluster is down)' within 0.1 s of one restart.
    Within ``settling`` of the end of an outage, such a failure is logged at DEBUG, and as
    a WARNING only once it outlasts ``settling`` or something else fails meanwhile."""
    health = ServerHealth("Redis Cluster at 127.0.0.1:1")
    with caplog.at_level(logging.DEBUG, logger="pqueue.broker"):
        health.lost("connection refused")
        health.ok()
        health.lost("The cluster is down", settling=60.0)  # the tail
        assert health.down
        health.ok()
        health.lost("The cluster is down", settling=60.0)  # a tail that outlasts settling
        health.lost("The cluster is down", settling=0.0)
        health.ok()
    records = [(r.levelname, r.getMessage().split(" (")[0]) for r in caplog.records]
    levels = [level for level, _ in records]
    assert levels == ["WARNING", "INFO", "DEBUG", "DEBUG", "DEBUG", "WARNING", "INFO"]
    assert records[5][1] == "lost Redis Cluster at 127.0.0.1:1"


def test_a_failure_long_after_an_outage_is_a_new_one(caplog: pytest.LogCaptureFixture) -> None:
    health = ServerHealth("Redis Cluster at 127.0.0.1:1")
    with caplog.at_level(logging.DEBUG, logger="pqueue.broker"):
        health.lost("connection refused")
        health.ok()
        health.back_at = time.monotonic() - 10  # the outage ended 10 s ago
        health.lost("The cluster is down", settling=2.0)
        health.ok()
    assert [r.levelname for r in caplog.records] == ["WARNING", "INFO", "WARNING", "INFO"]
