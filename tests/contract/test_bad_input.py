"""Contract: BadInputContract (see pqueue.testing.contract.bad_input), once per backend."""

from pqueue.testing.contract import BadInputContract


class TestBadInput(BadInputContract):
    pass
