"""Contract: IdempotencyContract (see pqueue.testing.contract.idempotency), once per backend."""

from pqueue.testing.contract import IdempotencyContract


class TestIdempotency(IdempotencyContract):
    pass
