"""Contract: PriorityContract (see pqueue.testing.contract.priority), once per backend."""

from pqueue.testing.contract import PriorityContract


class TestPriority(PriorityContract):
    pass
