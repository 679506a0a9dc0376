"""Loopback ports for the servers a test starts: private Redis and Postgres, ``pqueue serve``,
``pqueue worker --metrics-port``.

A port from ``bind(("127.0.0.1", 0))`` is free when asked, but it is an ephemeral port: until
the server binds it (and while a restarted server is down), any outgoing connection of any
process may take it as its local port, and the server then fails to start. Under
pytest-xdist several processes open connections all the time, so that window is real. The
ports here come from below the kernel's ephemeral range, which ``connect()`` never hands
out, in a block of each xdist worker's own (ADR 0133), and are checked free before use.
"""

from __future__ import annotations

import itertools
import os
import socket
from pathlib import Path

FIRST = 20000
"""The first port of block 0: the process that is no xdist worker (a run without xdist, or
the xdist controller, which starts the shared Redis Cluster). Worker gwN has block N + 1."""
BLOCK = 250
"""Ports per xdist worker: a test takes one or two, a worker reuses its block round-robin."""

_next = itertools.count()


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default; other systems start higher (49152)


def _worker_index() -> int:
    """This process's block: 0 outside the xdist workers (the controller's servers must not
    share a block with gw0's tests, which would take a port a moment before the controller
    binds it), N + 1 for worker gwN."""
    digits = os.environ.get("PYTEST_XDIST_WORKER", "").removeprefix("gw")
    return int(digits) + 1 if digits.isdigit() else 0


def _bindable(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _kernel_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def free_port() -> int:
    """A loopback port nothing listens on, this process's own while it runs its tests."""
    start = FIRST + _worker_index() * BLOCK
    if start + BLOCK > _ephemeral_low():  # too many workers for the room below the range
        return _kernel_port()
    for _ in range(BLOCK):
        port = start + next(_next) % BLOCK
        if _bindable(port):
            return port
    return _kernel_port()
