"""Contract: ScanContract (see pqueue.testing.contract.scan), once per backend."""

from pqueue.testing.contract import ScanContract


class TestScan(ScanContract):
    pass
