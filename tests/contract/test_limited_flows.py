"""Contract: LimitedFlowContract (see pqueue.testing.contract.limited_flows), once per backend."""

from pqueue.testing.contract import LimitedFlowContract


class TestLimitedFlows(LimitedFlowContract):
    pass
