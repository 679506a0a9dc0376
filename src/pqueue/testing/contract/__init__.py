"""The behavioural contract every pqueue backend must pass.

Subclass these in a test module; the fixtures come from ``pqueue.testing.plugin``
(``broker``, ``clock``, ``open_broker``), which needs your ``pqueue_open_broker``::

    from pqueue.testing.contract import EnqueueContract
    class TestEnqueue(EnqueueContract): ...

Each class asserts one area of docs/architecture.md; together they are the contract.
"""

from pqueue.testing.contract.admin import AdminContract
from pqueue.testing.contract.bad_input import BadInputContract
from pqueue.testing.contract.completion import CompletionContract
from pqueue.testing.contract.concurrency import ConcurrencyContract
from pqueue.testing.contract.control import CancelRunningContract, PauseContract
from pqueue.testing.contract.declared_options import DeclaredOptionsContract
from pqueue.testing.contract.enqueue import EnqueueContract
from pqueue.testing.contract.flows import FlowContract
from pqueue.testing.contract.idempotency import IdempotencyContract
from pqueue.testing.contract.job_priority import JobPriorityContract
from pqueue.testing.contract.lifecycle import LifecycleContract
from pqueue.testing.contract.limited_flows import LimitedFlowContract
from pqueue.testing.contract.limits import LimitsContract
from pqueue.testing.contract.priority import PriorityContract
from pqueue.testing.contract.recovery import RecoveryContract
from pqueue.testing.contract.scan import ScanContract
from pqueue.testing.contract.schedules import PeriodicContract, ScheduleStoreContract
from pqueue.testing.contract.unique import UniqueContract
from pqueue.testing.contract.wakeup import HandoffContract, WakeupContract

ALL_CONTRACTS = (
    EnqueueContract,
    PriorityContract,
    JobPriorityContract,
    LifecycleContract,
    RecoveryContract,
    UniqueContract,
    IdempotencyContract,
    AdminContract,
    ConcurrencyContract,
    BadInputContract,
    WakeupContract,
    HandoffContract,
    ScanContract,
    ScheduleStoreContract,
    PeriodicContract,
    PauseContract,
    CancelRunningContract,
    FlowContract,
    LimitsContract,
    CompletionContract,
    LimitedFlowContract,
    DeclaredOptionsContract,
)

__all__ = [c.__name__ for c in ALL_CONTRACTS] + ["ALL_CONTRACTS"]
