"""Contract: UniqueContract (see pqueue.testing.contract.unique), once per backend."""

from pqueue.testing.contract import UniqueContract


class TestUnique(UniqueContract):
    pass
