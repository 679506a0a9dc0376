"""The metrics tests reuse the worker tests' fixtures (a client and worker per backend)."""

from tests.worker.conftest import client, make_worker

__all__ = ["client", "make_worker"]
