"""Contract: PauseContract and CancelRunningContract (pqueue.testing.contract.control), once per backend."""

from pqueue.testing.contract import CancelRunningContract, PauseContract


class TestPause(PauseContract):
    pass


class TestCancelRunning(CancelRunningContract):
    pass
