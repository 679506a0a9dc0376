"""What a chaos run will do, drawn from its seed: the jobs, the admin work, the faults.

Everything random comes from here, from ``random.Random`` streams seeded by the run's
seed, one stream per concern (jobs, admin, faults, clients), so the same seed gives the
same jobs (ids included), options, behaviours and fault schedule. What the machine does
in between (which worker claims what, when a reply arrives) is the machine's: a timing
bug shows up again under the same seed with a good chance, not with certainty.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from pqueue.chaos.app import ASYNC, QUEUES, SYNC
from pqueue.task import Task

UNIQUE_TTL_KEYS = ("u0", "u1", "u2")
UNIQUE_DONE_KEYS = ("u3", "u4", "u5")
IDEMPOTENCY_KEYS = tuple(f"i{n}" for n in range(8))
LIMITS: dict[str, dict[str, Any]] = {
    "L0": {"concurrency": 1},
    "L1": {"concurrency": 2},
    "L2": {"rate": "30/s"},
}
"""Limit groups and their rules (a group's rule is the same on every job of it)."""

SUCCEEDS = frozenset({"ok", "slow", "flaky", "long", "txn", "txn_fail"})
"""Behaviours that end completed unless something else (a cancel, a parent) intervenes."""
FAILS = frozenset({"fail", "skip", "timeout"})
"""Behaviours that never complete: dead once their attempts are spent."""
TRANSACTIONAL = frozenset({"txn", "txn_fail", "txn_timeout"})


@dataclass(frozen=True, slots=True)
class PlannedJob:
    """One job to enqueue: its task and, for the checker, the behaviour it was given."""

    task: Task
    behaviour: str
    unique_mode: str | None = None

    @property
    def id(self) -> str:
        assert self.task.job_id is not None
        return self.task.job_id

    def describe(self) -> dict[str, Any]:
        """What the history records of it at enqueue."""
        t = self.task
        return {
            "b": self.behaviour, "type": t.type, "queue": t.queue, "max_retries": t.max_retries,
            "timeout": t.timeout, "delay": t.delay, "priority": t.priority, "unique_key": t.unique_key,
            "unique_for": t.unique_for, "unique_mode": self.unique_mode, "idem": t.idempotency_key,
            "parents": list(t.depends_on), "on_parent_failure": t.on_parent_failure,
            "limit_key": t.limit_key, "concurrency": t.concurrency, "rate": t.rate,
        }  # fmt: skip


@dataclass(frozen=True, slots=True)
class Op:
    """One step of the workload: enqueue one job or a batch, or cancel a job later."""

    kind: str  # "one" | "many" | "cancel"
    jobs: tuple[PlannedJob, ...] = ()
    target: str | None = None
    after: float = 0.0


@dataclass(frozen=True, slots=True)
class Fault:
    """One fault: when (seconds into the run), what, on which worker, for how long."""

    at: float
    kind: str
    target: int = 0
    duration: float = 0.0
    value: float = 0.0
    crash: bool = False


@dataclass
class Plan:
    """The run's random choices, each stream from the seed."""

    seed: int
    transactional: bool
    """Whether the backend completes jobs in transactions (else txn behaviours become ``ok``)."""
    _jobs: random.Random = field(init=False)
    _made: list[str] = field(init=False, default_factory=list)
    _serial: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        self._jobs = self.stream("jobs")

    def stream(self, name: str) -> random.Random:
        """An independent random stream of this seed for one concern."""
        return random.Random(f"{self.seed}:{name}")

    def ops(self) -> Iterator[Op]:
        """The workload, endless: mostly single enqueues, some batches, cancels of long jobs."""
        rng = self._jobs
        while True:
            roll = rng.random()
            if roll < 0.8:
                job = self.job()
                yield Op("one", (job,))
                if job.behaviour == "long" and rng.random() < 0.7:
                    yield Op("cancel", target=job.id, after=rng.uniform(0.2, 1.5))
            else:
                yield Op("many", tuple(self.job(in_batch=True) for _ in range(rng.randint(2, 15))))

    def job(
        self, *, in_batch: bool = False, rng: random.Random | None = None, simple: bool = False
    ) -> PlannedJob:
        """One job with random behaviour and options (from ``rng``: the jobs stream by default;
        only that stream's jobs may become parents of later ones). A ``simple`` one has only
        the options a ``pqueue enqueue`` command line carries here: no keys, parents or limits."""
        own = rng is None
        rng = self._jobs if rng is None else rng
        self._serial += 1
        behaviour = self._behaviour(rng)
        options: dict[str, Any] = {
            "queue": rng.choice(QUEUES),
            "max_retries": rng.randint(0, 3),
            "job_id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        }
        payload: dict[str, Any] = {"b": behaviour, "i": self._serial}
        self._shape(rng, behaviour, payload, options)
        if rng.random() < 0.15:
            options["delay"] = round(rng.uniform(0.1, 3.0), 3)
        if rng.random() < 0.3:
            options["priority"] = rng.randint(-5, 5)
        unique_mode = None if simple else self._unique(rng, options)
        if not simple and behaviour in ("ok", "slow") and rng.random() < 0.08:
            options["idempotency_key"] = rng.choice(IDEMPOTENCY_KEYS)
        if not (in_batch or simple) and self._made and rng.random() < 0.08:
            recent = self._made[-50:]
            options["depends_on"] = tuple(rng.sample(recent, min(len(recent), rng.randint(1, 2))))
            options["on_parent_failure"] = rng.choice(("cancel", "run"))
        if not simple and rng.random() < 0.1:
            key = rng.choice(tuple(LIMITS))
            options.update(limit_key=key, **LIMITS[key])
        type_ = ASYNC if rng.random() < 0.6 else SYNC
        planned = PlannedJob(Task(type_, payload, **options), behaviour, unique_mode)
        if own:
            self._made.append(planned.id)
        return planned

    def _behaviour(self, rng: random.Random) -> str:
        behaviour = rng.choices([name for name, _ in _SHARES], [share for _, share in _SHARES])[0]
        if behaviour in TRANSACTIONAL and not self.transactional:
            return "ok"
        return behaviour

    @staticmethod
    def _shape(rng: random.Random, behaviour: str, payload: dict[str, Any], options: dict[str, Any]) -> None:
        """Sleeps, failure counts and timeouts that make each behaviour do what it says."""
        if behaviour == "slow":
            payload["s"] = round(rng.uniform(0.1, 0.8), 3)
        elif behaviour in ("flaky", "txn_fail"):
            options["max_retries"] = max(options["max_retries"], 1)
            payload["n"] = rng.randint(1, options["max_retries"])
        elif behaviour == "timeout":
            options["timeout"] = round(rng.uniform(0.1, 0.3), 3)
            options["max_retries"] = rng.randint(0, 1)
            payload["s"] = options["timeout"] * 3
        elif behaviour == "txn_timeout":
            options["timeout"] = 0.3
            options["max_retries"] = rng.randint(0, 2)
            payload["s"] = round(rng.uniform(0.15, 0.45), 3)
        elif behaviour == "long":
            payload["s"] = round(rng.uniform(1.0, 3.0), 3)

    @staticmethod
    def _unique(rng: random.Random, options: dict[str, Any]) -> str | None:
        if rng.random() >= 0.08:
            return None
        mode = rng.choice(("ttl", "done"))
        options["unique_key"] = rng.choice(UNIQUE_TTL_KEYS if mode == "ttl" else UNIQUE_DONE_KEYS)
        options["unique_for"] = round(rng.uniform(0.5, 3.0), 3)
        options["unique_until"] = mode
        return mode


_SHARES: tuple[tuple[str, float], ...] = (
    ("ok", 0.36), ("slow", 0.10), ("flaky", 0.10), ("fail", 0.05), ("skip", 0.03),
    ("timeout", 0.04), ("long", 0.04), ("txn", 0.14), ("txn_fail", 0.06), ("txn_timeout", 0.08),
)  # fmt: skip
"""Each behaviour's share of the jobs (sums to 1)."""


FAULT_KINDS = ("kill", "stop", "drain", "reset", "stall", "latency", "restart", "failover")
"""Every fault ``pqueue chaos`` knows; which apply depends on the DSN (see :mod:`.faults`)."""


def fault_schedule(
    plan: Plan, kinds: tuple[str, ...], *, duration: float, workers: int, lease: float
) -> list[Fault]:
    """Faults every 1.5-4 s from the 2nd second until 2 s before the end, one at a time
    (closer together in a run shorter than 30 s)."""
    rng = plan.stream("faults")
    out: list[Fault] = []
    scale = min(1.0, duration / 30)  # short runs get their faults closer together
    at = 2.0 * scale
    while kinds:
        at += rng.uniform(1.5, 4.0) * scale
        if at > duration - 2.0 * scale:
            break
        kind = rng.choice(kinds)
        target = rng.randrange(max(workers, 1))
        if kind == "stop":
            fault = Fault(at, kind, target, duration=round(lease * rng.uniform(1.3, 2.5), 3))
        elif kind == "stall":
            fault = Fault(at, kind, duration=round(rng.uniform(0.3, lease * 1.8), 3))
        elif kind == "latency":
            fault = Fault(
                at, kind, duration=round(rng.uniform(1.0, 4.0), 3), value=round(rng.uniform(0.005, 0.05), 4)
            )
        elif kind == "restart":
            fault = Fault(at, kind, duration=round(rng.uniform(0.3, 2.0), 3), crash=rng.random() < 0.5)
        else:
            fault = Fault(at, kind, target)
        out.append(fault)
        at += fault.duration
    return out


CLIENT_KINDS = ("enqueue", "stats", "jobs", "client")


def client_schedule(plan: Plan, *, duration: float) -> list[tuple[float, str, PlannedJob | None]]:
    """Short-lived processes (the CLI, a sync client) every 1-3 s: when, which, and the job
    an enqueuing one sends (drawn here so the seed fixes it)."""
    rng = plan.stream("clients")
    out: list[tuple[float, str, PlannedJob | None]] = []
    at = rng.uniform(0.5, 1.5)
    while at < duration - 1.0:
        kind = rng.choice(CLIENT_KINDS)
        job = plan.job(rng=rng, simple=True) if kind in ("enqueue", "client") else None
        out.append((at, kind, job))
        at += rng.uniform(1.0, 3.0)
    return out
