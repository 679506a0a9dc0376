"""Contract: EnqueueContract (see pqueue.testing.contract.enqueue), once per backend."""

from pqueue.testing.contract import EnqueueContract


class TestEnqueue(EnqueueContract):
    pass
