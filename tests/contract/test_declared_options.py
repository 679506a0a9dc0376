"""Contract: DeclaredOptionsContract (see pqueue.testing.contract.declared_options), once per backend."""

from pqueue.testing.contract import DeclaredOptionsContract


class TestDeclaredOptions(DeclaredOptionsContract):
    pass
