"""Contract: FaultContract (see pqueue.testing.faults.contract), once per backend."""

from pqueue.testing.faults import FaultContract


class TestFaults(FaultContract):
    pass
