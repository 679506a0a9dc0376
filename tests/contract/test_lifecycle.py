"""Contract: LifecycleContract (see pqueue.testing.contract.lifecycle), once per backend."""

from pqueue.testing.contract import LifecycleContract


class TestLifecycle(LifecycleContract):
    pass
