"""Contract: WakeupContract (see pqueue.testing.contract.wakeup), once per backend."""

from pqueue.testing.contract import WakeupContract


class TestWakeup(WakeupContract):
    pass
