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
    with pytest.raises(ConfigError, match="unknown option"):
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
