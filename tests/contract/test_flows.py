"""Contract: FlowContract (see pqueue.testing.contract.flows), once per backend."""

from pqueue.testing.contract import FlowContract


class TestFlows(FlowContract):
    pass
