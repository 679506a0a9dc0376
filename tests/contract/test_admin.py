"""Contract: AdminContract (see pqueue.testing.contract.admin), once per backend."""

from pqueue.testing.contract import AdminContract


class TestAdmin(AdminContract):
    pass
