"""Contract: CompletionContract (see pqueue.testing.contract.completion), once per backend."""

from pqueue.testing.contract import CompletionContract


class TestCompletion(CompletionContract):
    pass
