"""Contract: RecoveryContract (see pqueue.testing.contract.recovery), once per backend."""

from pqueue.testing.contract import RecoveryContract


class TestRecovery(RecoveryContract):
    pass
