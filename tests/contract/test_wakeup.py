"""Contract: WakeupContract and HandoffContract (see pqueue.testing.contract.wakeup),
once per backend."""

from pqueue.testing.contract import HandoffContract, WakeupContract


class TestWakeup(WakeupContract):
    pass


class TestHandoff(HandoffContract):
    pass
