"""Contract: ScheduleStoreContract and PeriodicContract (pqueue.testing.contract.schedules), per backend."""

from pqueue.testing.contract import PeriodicContract, ScheduleStoreContract


class TestScheduleStore(ScheduleStoreContract):
    pass


class TestPeriodic(PeriodicContract):
    pass
