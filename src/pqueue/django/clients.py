"""One ``pqueue.Client`` per DSN per process, shared by every backend instance.

Django makes a task backend per thread (its connection handler is thread-local); a
client per thread would be a loop thread and a connection pool each. The client is
fork-safe (it starts afresh in a child), and closed at interpreter exit.
"""

from __future__ import annotations

import atexit
import threading

from pqueue.sync import Client

_clients: dict[str, Client] = {}
_lock = threading.Lock()


def client_for(dsn: str) -> Client:
    """The process's client of ``dsn``, made on first use."""
    client = _clients.get(dsn)
    if client is None:
        with _lock:
            client = _clients.get(dsn)
            if client is None:
                client = _clients[dsn] = Client(dsn)
    return client


@atexit.register
def close_all() -> None:
    """Close every client (at exit, and between tests that change the DSN)."""
    with _lock:
        clients = list(_clients.values())
        _clients.clear()
    for client in clients:
        client.close()
