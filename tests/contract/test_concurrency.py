"""Contract: ConcurrencyContract (see pqueue.testing.contract.concurrency), once per backend."""

from pqueue.testing.contract import ConcurrencyContract


class TestConcurrency(ConcurrencyContract):
    pass
