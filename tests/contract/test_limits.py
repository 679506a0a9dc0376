"""Contract: LimitsContract (see pqueue.testing.contract.limits), once per backend."""

from pqueue.testing.contract import LimitsContract


class TestLimits(LimitsContract):
    pass
