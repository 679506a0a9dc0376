"""``redis+cluster://`` / ``rediss+cluster://`` DSNs (ADR 0143), without a server."""

from __future__ import annotations

import pytest

pytest.importorskip("redis")

from redis.exceptions import AskError, ClusterDownError, MovedError, RedisClusterException

from pqueue.broker import Capability
from pqueue.brokers import connect
from pqueue.brokers.redis import RedisBroker
from pqueue.brokers.redis.cluster import describe_cluster_error, reconfiguring
from pqueue.brokers.redis.config import RedisOptions
from pqueue.errors import BrokerUnreachable, ConfigError


def test_startup_nodes_prefix_and_options_are_read() -> None:
    opts = RedisOptions.parse(
        "redis+cluster://u:pw@10.0.0.1:7000,10.0.0.2:7001,db3/?prefix=app:jobs&pool_size=4&socket_timeout=3",
        {},
    )
    assert opts.nodes == (("10.0.0.1", 7000), ("10.0.0.2", 7001), ("db3", 6379))
    assert opts.cluster
    assert (opts.prefix, opts.pool_size) == ("app:jobs", 4)
    assert opts.url == "redis://u:pw@10.0.0.1:7000/?socket_timeout=3"


def test_ipv6_startup_nodes_keep_their_brackets() -> None:
    # the first node's URL was rebuilt without them: 'Port could not be cast'
    opts = RedisOptions.parse("redis+cluster://u:pw@[::1]:7000,[fe80::2]:7001/", {})
    assert opts.nodes == (("::1", 7000), ("fe80::2", 7001))
    assert opts.url == "redis://u:pw@[::1]:7000/"


def test_a_tls_cluster_takes_the_tls_options() -> None:
    opts = RedisOptions.parse("rediss+cluster://h:7000?ssl_cert_reqs=none", {})
    assert opts.nodes == (("h", 7000),)
    assert opts.url == "rediss://h:7000/?ssl_cert_reqs=none"


def test_connect_knows_both_cluster_schemes_and_the_broker_does_not_hand_off() -> None:
    for scheme in ("redis+cluster", "rediss+cluster"):
        broker = connect(f"{scheme}://127.0.0.1:7000/")
        assert isinstance(broker, RedisBroker)
        assert broker.options.cluster
        assert Capability.HANDOFF not in broker.capabilities
        assert broker.server == "Redis Cluster at 127.0.0.1:7000"
    assert Capability.HANDOFF in connect("redis://127.0.0.1/0").capabilities


@pytest.mark.parametrize(
    ("dsn", "words"),
    [
        ("redis+cluster://h:7000/?prefx=a", ["'prefx'", "known: prefix"]),
        ("redis+cluster://h:7000/?db=2", ["'db'", "known:"]),
        ("redis+cluster://h:7000/2", ["database 0 only"]),
        ("redis+cluster://h:7000,h:notaport/", ["'h:notaport' is not host:port"]),
        ("redis+cluster://h:7000,:7001/", ["':7001' is not host:port"]),
        ("redis+cluster://h:7000/?prefix={x}", ["prefix"]),
        ("redis+cluster://h:7000/?ssl_cert_reqs=none", ["rediss://"]),
    ],
)
def test_bad_cluster_dsns_are_refused_in_one_clear_error(dsn: str, words: list[str]) -> None:
    with pytest.raises(ConfigError) as info:
        connect(dsn)
    assert all(word in str(info.value) for word in words), str(info.value)


@pytest.mark.parametrize(
    "exc",
    [
        MovedError("7422 127.0.0.1:7101"),
        AskError("7422 127.0.0.1:7101"),
        ClusterDownError("CLUSTERDOWN The cluster is down"),
        RedisClusterException(
            "Redis Cluster cannot be connected. Please provide at least one reachable node"
        ),
    ],
)
def test_reconfiguring_errors_are_unreachable_and_never_show_a_raw_redirect(exc: Exception) -> None:
    broker = connect("redis+cluster://127.0.0.1:7100,127.0.0.1:7101/")
    assert isinstance(broker, RedisBroker)
    assert reconfiguring(exc)
    error = broker.translate(exc)
    assert isinstance(error, BrokerUnreachable)
    assert "7422" not in str(error) and "MOVED" not in str(error) and "ASK " not in str(error)
    assert "\n" not in str(error)
    assert "127.0.0.1:7100,127.0.0.1:7101" in str(error)
    assert describe_cluster_error(exc) in str(error)


def test_wait_replicas_is_an_own_option_of_every_redis_dsn() -> None:
    assert RedisOptions.parse("redis://h/0?wait_replicas=1", {}).wait_replicas == 1
    assert RedisOptions.parse("redis+cluster://h:7000/", {"wait_replicas": 2}).wait_replicas == 2
    assert RedisOptions.parse("redis://h/0", {}).wait_replicas == 0
    with pytest.raises(ConfigError, match="wait_replicas"):
        connect("redis://h/0?wait_replicas=-1")
