"""Backend selection by DSN."""

from __future__ import annotations

import pytest

import pqueue
from pqueue.brokers import known_schemes, redact
from pqueue.brokers.memory import MemoryBroker, drop_store
from pqueue.clock import ManualClock
from pqueue.errors import ConfigError


def test_memory_scheme() -> None:
    broker = pqueue.connect("memory://unit-connect?retention=60")
    assert isinstance(broker, MemoryBroker) and broker.store.retention == 60
    drop_store("unit-connect")


def test_known_schemes_include_the_builtins() -> None:
    assert {"memory", "redis", "rediss", "postgresql", "postgres"} <= set(known_schemes())


@pytest.mark.parametrize("dsn", ["mysql://x", "amqp://guest@localhost", "nats://1"])
def test_unknown_scheme_names_the_known_ones(dsn: str) -> None:
    with pytest.raises(ConfigError) as info:
        pqueue.connect(dsn)
    assert "unknown DSN scheme" in str(info.value)
    for scheme in ("memory", "redis", "postgresql"):
        assert scheme in str(info.value)


@pytest.mark.parametrize("dsn", ["", "localhost:6379", None, 42])
def test_not_a_dsn(dsn: object) -> None:
    with pytest.raises(ConfigError, match="invalid DSN"):
        pqueue.connect(dsn)  # type: ignore[arg-type]


def test_bad_memory_options() -> None:
    with pytest.raises(ConfigError, match=r"unknown (DSN parameter|keyword option)"):
        pqueue.connect("memory://x?colour=blue")
    with pytest.raises(ConfigError, match="retention"):
        pqueue.connect("memory://x?retention=soon")


def test_one_memory_store_cannot_run_on_two_clocks() -> None:
    pqueue.connect("memory://two-clocks", clock=ManualClock())
    with pytest.raises(ConfigError, match="another clock"):
        pqueue.connect("memory://two-clocks", clock=ManualClock())
    drop_store("two-clocks")


def test_errors_never_echo_passwords() -> None:
    assert redact("redis://:s3cret@host:6379/0") == "redis://:***@host:6379/0"
    assert redact("postgresql://app:pw@db/x") == "postgresql://app:***@db/x"
    with pytest.raises(ConfigError) as info:
        pqueue.connect("mysql://app:hunter2@db/x")
    assert "hunter2" not in str(info.value)
    assert redact("postgresql://db/x?password=hunter2&sslmode=require") == (
        "postgresql://db/x?password=***&sslmode=require"
    )


@pytest.mark.parametrize(
    "dsn",
    ["redis://[::1", "redis://h:99999/0", "postgresql://[bad/db", "memory://[x", "postgres://u:pw@h:port/db"],
)
def test_a_malformed_dsn_is_a_config_error(dsn: str) -> None:
    with pytest.raises(ConfigError, match="malformed DSN") as info:
        pqueue.connect(dsn)
    assert "pw@" not in str(info.value)


@pytest.mark.parametrize(
    "dsn",
    ["memory://x?retention=nan", "postgresql://h/db?retention=nan", "postgresql://h/db?pool_timeout=inf",
     "redis://h/0?retention=inf"],
)  # fmt: skip
def test_options_must_be_finite_numbers(dsn: str) -> None:
    with pytest.raises(ConfigError, match="finite"):
        pqueue.connect(dsn)


class _FakeEntryPoint:
    def __init__(self, name: str, loaded: object) -> None:
        self.name, self._loaded = name, loaded

    def load(self) -> object:
        return self._loaded


class _PluginBroker:
    @classmethod
    def from_url(cls, dsn: str, **options: object) -> _PluginBroker:
        return cls()


def test_plug_ins_add_schemes_but_cannot_take_over_a_built_in_one(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.metadata

    hijack = _FakeEntryPoint("memory", _PluginBroker)
    custom = _FakeEntryPoint("custom", _PluginBroker)
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group: [hijack, custom])
    assert "custom" in known_schemes()
    assert isinstance(pqueue.connect("custom://anything"), _PluginBroker)
    broker = pqueue.connect("memory://unit-plugins")
    assert isinstance(broker, MemoryBroker)
    drop_store("unit-plugins")


@pytest.mark.parametrize(
    ("dsn", "options", "unknown", "guess", "known"),
    [
        ("memory://opts?bogus=1", {}, "'bogus'", None, "retention"),
        ("memory://opts?retenton=5", {}, "'retenton'", "'retention'", "retention"),
        ("memory://opts", {"bogus": 1}, "'bogus'", None, "retention"),
        ("redis://127.0.0.1:6379/0?bogus=1", {}, "'bogus'", None, "prefix, retention, pool_size"),
        ("redis://h/0?prefx=app", {}, "'prefx'", "'prefix'", "socket_timeout"),
        ("redis://h/0", {"pool_sise": 4}, "'pool_sise'", "'pool_size'", "pool_timeout, retries"),
        ("postgresql://db/app?bogus=1", {}, "'bogus'", None, "schema"),
        ("postgresql://db/app?sslmod=require", {}, "'sslmod'", "'sslmode'", "application_name"),
        ("postgres://db/app", {"shema": "x"}, "'shema'", "'schema'", "pool_max"),
    ],
)
def test_unknown_options_are_refused_naming_the_known_ones(
    dsn: str, options: dict[str, object], unknown: str, guess: str | None, known: str
) -> None:
    """The DSN's query parameters and the keyword options of every backend, before any I/O."""
    if dsn.startswith("redis"):
        pytest.importorskip("redis")
    if dsn.startswith("postgres"):
        pytest.importorskip("psycopg")
    with pytest.raises(ConfigError) as info:
        pqueue.connect(dsn, **options)
    message = str(info.value)
    assert f"unknown {'keyword option' if options else 'DSN parameter'} {unknown}" in message
    assert known in message.split("known: ")[1]
    assert (f"did you mean {guess}?" in message) if guess else ("did you mean" not in message)


def test_clients_refuse_unknown_options_too() -> None:
    with pytest.raises(ConfigError, match="unknown keyword option 'bogus'"):
        pqueue.AsyncClient("memory://opts", bogus=1)
    with pytest.raises(ConfigError, match="unknown DSN parameter 'bogus'"):
        pqueue.Client("memory://opts?bogus=1")


def test_every_unknown_option_is_named_once() -> None:
    with pytest.raises(ConfigError) as info:
        pqueue.connect("memory://opts?b=1&a=2&b=3")
    assert "unknown DSN parameters 'a', 'b'; known: retention" in str(info.value)


def test_secret_parameters_of_every_driver_are_redacted() -> None:
    assert redact("rediss://h/0?ssl_password=hunter2&db=1") == "rediss://h/0?ssl_password=***&db=1"
    assert "hunter2" not in redact("postgresql://db/x?oauth_client_secret=hunter2")


def test_a_dsn_without_secrets_is_shown_as_given() -> None:
    """Rebuilding it would turn sqlite:///pqueue.db into sqlite:/pqueue.db in every log line."""
    assert redact("sqlite:///pqueue.db") == "sqlite:///pqueue.db"
    assert (
        redact("sqlite:////var/lib/app/jobs.db?retention=60") == "sqlite:////var/lib/app/jobs.db?retention=60"
    )
    assert redact("redis://:hunter2@h:6379/0") == "redis://:***@h:6379/0"
