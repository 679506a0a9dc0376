"""``--private-broker``: a server of the DSN's kind that the chaos run starts, owns,
restarts and removes (:mod:`pqueue.chaos.servers`), so that server faults can be injected
without touching anybody's server. Only the DSN's scheme counts then.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pqueue.errors import ConfigError


@contextlib.contextmanager
def private_broker(scheme: str) -> Iterator[tuple[str, Any]]:
    """Start a server for ``scheme``; yields its DSN and the server (None for files and
    memory), and removes it afterwards."""
    from pqueue.chaos import servers

    folder = Path(tempfile.mkdtemp(prefix="pqueue-chaos-broker-"))
    server: Any = None
    try:
        if scheme == "memory":
            yield "memory://", None
        elif scheme == "sqlite":
            yield f"sqlite:///{folder / 'pqueue.db'}", None
        elif scheme in ("redis", "redis+cluster", "postgresql", "postgres"):
            server = _make(servers, scheme, folder)
            server.start()
            yield server.url, server
        else:
            raise ConfigError(
                f"--private-broker starts redis://, redis+cluster://, postgresql://, sqlite:// or memory://, "
                f"not {scheme}://"
            )
    finally:
        if server is not None:
            with contextlib.suppress(Exception):
                (getattr(server, "remove", None) or server.stop)()
        shutil.rmtree(folder, ignore_errors=True)


def _make(servers: Any, scheme: str, folder: Path) -> Any:
    if scheme == "redis":
        kind = servers.PrivateRedis
    elif scheme == "redis+cluster":
        kind = servers.PrivateRedisCluster
    else:
        kind = servers.PrivatePostgres
    problem = kind.missing()
    if problem:
        raise ConfigError(f"--private-broker: {problem}")
    port = servers.steady_port  # restarts and failovers need their ports back
    return kind(folder, port=port) if scheme == "redis" else kind(port=port)
