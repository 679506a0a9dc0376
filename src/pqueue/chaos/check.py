"""The rules a chaos run's history must keep, checked once the run is quiet.

Every rule is written so that it can only fail on a real defect: where the history cannot
tell (a line a SIGKILL kept from being written, a claim time a handler cannot see), the
rule leaves the case out rather than guess. The rules:

- ``lost``: every acknowledged enqueue reaches exactly one final state (found, and
  completed, dead or cancelled once the run is quiet); so does every job stored by an
  enqueue whose reply was lost;
- ``doubled``: no job is completed twice (two ``completed`` settlements, or two effect rows
  of one ``job.transaction()``);
- ``effects``: a job completed in its transaction has exactly one effect; one that did not
  complete has none;
- ``unique``: a job is never created while another holds its queue's unique key;
- ``idempotency``: one idempotency key, one successful run (the rest are duplicates);
- ``limit``: runs of one group whose lease was valid never exceed its concurrency;
- ``state``: observed status changes follow the state machine (docs/architecture.md);
- ``outcome``: a job that always fails never completes; one that dies by failing has spent
  its retries; a successful cancel leaves the job cancelled;
- ``parents``: a job never starts before its parents ended, nor after one died when it was
  to be cancelled with it;
- ``refused``: an enqueue refused as invalid stored nothing.
"""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pqueue.chaos.history import Event, by_job
from pqueue.chaos.plan import FAILS, TRANSACTIONAL
from pqueue.job import Job, JobStatus

FINAL = frozenset({JobStatus.COMPLETED, JobStatus.DEAD, JobStatus.CANCELLED})

_EDGES: dict[str, set[str]] = {
    "waiting": {"pending", "scheduled", "cancelled"},
    "scheduled": {"pending", "active", "cancelled"},
    "retry": {"pending", "active", "cancelled"},
    "pending": {"active", "cancelled"},
    "active": {"completed", "retry", "dead", "pending", "scheduled", "cancelled"},
    "dead": {"pending"},  # requeue only
    "completed": set(),
    "cancelled": set(),
}
"""docs/architecture.md's state machine, arrow by arrow."""


def _reach() -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for start in _EDGES:
        seen: set[str] = set()
        todo = [start]
        while todo:
            for nxt in _EDGES[todo.pop()]:
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        out[start] = seen
    return out


REACH = _reach()
"""Where each status can lead in any number of steps (an observer misses steps between looks)."""
KEPT_BY_LEASE_LOSS = ("LeaseExpired",)
"""Error kinds that end a job without spending its retries."""


@dataclass(frozen=True, slots=True)
class Violation:
    """One broken rule: which, what happened, and the jobs it concerns."""

    rule: str
    message: str
    jobs: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "message": self.message, "jobs": list(self.jobs)}


@dataclass
class Verdict:
    """The checker's findings."""

    violations: list[Violation] = field(default_factory=list)
    acknowledged: int = 0
    lost: int = 0
    doubled: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)

    def add(self, rule: str, message: str, *jobs: str) -> None:
        self.violations.append(Violation(rule, message, tuple(jobs)))


@dataclass(frozen=True, slots=True)
class _Enqueue:
    job: str
    t0: float
    t1: float
    created: bool
    holder: str
    spec: Mapping[str, Any]


class Checker:
    """Checks one run: its events, each known job as read once quiet (None: not found), and
    the effect rows per job (None when the backend has no transactional completion)."""

    def __init__(
        self, events: list[Event], finals: Mapping[str, Job | None], effects: Mapping[str, int] | None
    ) -> None:
        self.events = events
        self.finals = finals
        self.effects = effects
        self.jobs = by_job(events)
        self.specs: dict[str, Mapping[str, Any]] = {}
        self.enqueues: list[_Enqueue] = []
        for e in events:
            if e.kind == "enqueue" and e.job is not None:
                spec = e.get("spec") or {}
                self.specs.setdefault(e.job, spec)
                holder = str(e.get("holder") or e.job)
                self.enqueues.append(
                    _Enqueue(e.job, float(e.get("t0", e.t)), e.t, bool(e.get("created")), holder, spec)
                )
            elif e.kind in ("enqueue_error", "refused") and e.job is not None:
                self.specs.setdefault(e.job, e.get("spec") or {})
        self.acknowledged = {q.job for q in self.enqueues if q.holder == q.job}
        self.verdict = Verdict(acknowledged=len(self.acknowledged))

    def run(self) -> Verdict:
        for rule in (
            self._lost, self._doubled, self._effects, self._unique, self._idempotency, self._limits,
            self._states, self._outcomes, self._parents, self._refused,
        ):  # fmt: skip
            rule()
        return self.verdict

    # -- the rules ------------------------------------------------------------------------

    def _lost(self) -> None:
        maybe = {e.job for e in self.events if e.kind == "enqueue_error" and e.job is not None}
        stored = self.acknowledged | {j for j in maybe if self.finals.get(j) is not None}
        for job_id in sorted(stored):
            job = self.finals.get(job_id)
            if job is None:
                self.verdict.lost += 1
                self.verdict.add("lost", f"job {job_id} was acknowledged at enqueue and is gone", job_id)
            elif job.status not in FINAL:
                self.verdict.lost += 1
                self.verdict.add(
                    "lost", f"job {job_id} never reached a final state (still {job.status.value})", job_id
                )
            else:
                self.verdict.outcomes[job.status.value] += 1

    def _doubled(self) -> None:
        completions = Counter(
            e.job for e in self.events if e.kind == "settled" and e.get("outcome") == "completed" and e.job
        )
        doubled = {j for j, n in completions.items() if n > 1}
        for job_id in sorted(doubled):
            self.verdict.add("doubled", f"job {job_id} was completed {completions[job_id]} times", job_id)
        for job_id, n in sorted((self.effects or {}).items()):
            if n > 1 and job_id not in doubled:
                doubled.add(job_id)
                self.verdict.add("doubled", f"job {job_id}'s transaction effect happened {n} times", job_id)
        self.verdict.doubled = len(doubled)

    def _effects(self) -> None:
        if self.effects is None:
            return
        for job_id, spec in self.specs.items():
            job = self.finals.get(job_id)
            if spec.get("b") not in TRANSACTIONAL or job is None or job.status not in FINAL:
                continue
            n = self.effects.get(job_id, 0)
            if job.status is JobStatus.COMPLETED and n == 0:
                self.verdict.add(
                    "effects", f"job {job_id} is completed but its transaction's effect is missing", job_id
                )
            elif job.status is not JobStatus.COMPLETED and n:
                self.verdict.add(
                    "effects",
                    f"job {job_id} is {job.status.value} but its transaction's effect was committed",
                    job_id,
                )

    def _unique(self) -> None:
        groups: dict[tuple[str, str], list[_Enqueue]] = defaultdict(list)
        known = set(self.specs)
        for q in self.enqueues:
            key = q.spec.get("unique_key")
            if key is None:
                continue
            if q.created:
                groups[str(q.spec.get("queue")), str(key)].append(q)
            elif q.holder != q.job and q.holder not in known:
                self.verdict.add(
                    "unique", f"job {q.job} was refused for a holder {q.holder} nobody enqueued", q.job
                )
        ends = self._first_success_end()
        for (queue, key), created in groups.items():
            created.sort(key=lambda q: q.t0)
            for i, a in enumerate(created):
                for b in created[i + 1 :]:
                    if b.t1 - a.t0 >= float(a.spec.get("unique_for") or 0):
                        continue
                    if a.spec.get("unique_mode") == "done" and ends.get(a.job, float("inf")) < b.t1:
                        continue  # a may have completed first, which frees a "done" key
                    self.verdict.add(
                        "unique",
                        f"jobs {a.job} and {b.job} were both created under unique key {key!r} on {queue} "
                        f"within {b.t1 - a.t0:.3f}s (held for {a.spec.get('unique_for')}s)",
                        a.job, b.job,
                    )  # fmt: skip

    def _first_success_end(self) -> dict[str, float]:
        """The earliest each job may have completed: its first successful run's end (the ack
        follows it), or any time at all for one acked as an idempotency duplicate (no run)."""
        ends: dict[str, float] = {}
        for e in self.events:
            if e.job is None:
                continue
            if e.kind == "end" and e.get("how") == "ok":
                ends.setdefault(e.job, e.t)
            elif e.kind == "settled" and e.get("outcome") == "duplicate":
                ends[e.job] = float("-inf")
        return ends

    def _idempotency(self) -> None:
        per_key: dict[str, list[str]] = defaultdict(list)
        for e in self.events:
            if e.kind == "settled" and e.get("outcome") == "completed" and e.job is not None:
                key = self.specs.get(e.job, {}).get("idem")
                if key is not None:
                    per_key[str(key)].append(e.job)
        for key, jobs in per_key.items():
            if len(jobs) > 1:
                self.verdict.add(
                    "idempotency",
                    f"idempotency key {key!r} ran to success {len(jobs)} times",
                    *sorted(set(jobs)),
                )

    def _limits(self) -> None:
        cut = self._cuts()
        for (queue, group), limit in self._concurrency_groups().items():
            edges: list[tuple[float, int, str]] = []
            for job_id, start, end in self._valid_runs(queue, group, cut):
                edges += [(start, 1, job_id), (end, -1, job_id)]
            edges.sort(key=lambda edge: (edge[0], edge[1]))  # an end before a start at the same instant
            active: set[str] = set()
            for _, step, job_id in edges:
                if step > 0:
                    active.add(job_id)
                    if len(active) > limit:
                        self.verdict.add(
                            "limit",
                            f"{len(active)} jobs of limit group {group} on {queue} ran at once "
                            f"(concurrency {limit})",
                            *sorted(active),
                        )  # fmt: skip
                        return
                else:
                    active.discard(job_id)

    def _concurrency_groups(self) -> dict[tuple[str, str], int]:
        """(queue, limit key) -> concurrency: a group is one key within one queue."""
        groups: dict[tuple[str, str], int] = {}
        for spec in self.specs.values():
            if spec.get("limit_key") and spec.get("concurrency"):
                groups[str(spec.get("queue")), str(spec["limit_key"])] = int(spec["concurrency"])
        return groups

    def _cuts(self) -> dict[int, float]:
        """When each worker process stopped holding valid leases: killed or frozen."""
        cut: dict[int, float] = {}
        for e in self.events:
            if e.kind == "fault" and e.get("phase") == "begin" and e.get("fault") in ("kill", "stop"):
                cut.setdefault(int(e.get("target", 0)), e.t)
        return cut

    def _valid_runs(
        self, queue: str, group: str, cut: Mapping[int, float]
    ) -> Iterable[tuple[str, float, float]]:
        """(job, start, end) of each run in ``group`` while its lease held: from the handler's
        start to the first of its end, its settlement, a cancel of the job (which revokes the
        lease) and its process's kill or freeze; runs settled ``lost`` (their lease was gone)
        are left out."""
        for job_id, events in self.jobs.items():
            spec = self.specs.get(job_id, {})
            if spec.get("limit_key") != group or spec.get("queue") != queue:
                continue
            revoked = min(  # a cancel of a running job revokes its lease (and frees its slot) at once
                (float(e.get("t0", e.t)) for e in events if e.kind == "cancel" and e.get("ok")),
                default=float("inf"),
            )
            for i, start in enumerate(events):
                if start.kind != "start":
                    continue
                end = float("inf")
                lost = False
                for later in events[i + 1 :]:
                    if later.pid != start.pid:
                        continue
                    if later.kind in ("end", "settled"):
                        end = min(end, later.t)
                    if later.kind == "settled":
                        lost = later.get("outcome") == "lost"
                        break
                    if later.kind == "start":
                        break
                end = min(end, cut.get(start.pid, float("inf")), max(revoked, start.t))
                if not lost and end > start.t and end != float("inf"):
                    yield job_id, start.t, end

    def _states(self) -> None:
        requeues: dict[str, list[tuple[float, float]]] = defaultdict(list)  # (called, answered)
        for e in self.events:
            if e.kind == "requeue":
                requeues[str(e.get("queue"))].append((float(e.get("t0", e.t)), e.t))
        looks: dict[str, list[tuple[float, str]]] = defaultdict(list)
        for e in self.events:
            if e.kind == "observe" and e.job is not None:
                looks[e.job].append((e.t, str(e.get("status"))))
        for job_id, job in self.finals.items():
            if job is not None and job.status in FINAL and job_id in looks:
                looks[job_id].append((float("inf"), job.status.value))
        for job_id, seen in looks.items():
            queue = str(self.specs.get(job_id, {}).get("queue"))
            for (t0, a), (t1, b) in itertools.pairwise(seen):
                if a == b or b in REACH.get(a, set()):
                    # a requeue may have moved it between the looks if the call overlapped them
                    requeued = any(called <= t1 and answered >= t0 for called, answered in requeues[queue])
                    if a == "dead" and b != "dead" and not requeued:
                        self.verdict.add("state", f"job {job_id} left dead for {b} with no requeue", job_id)
                        break
                    continue
                self.verdict.add("state", f"job {job_id} was seen {a}, then {b}: no such transition", job_id)
                break

    def _outcomes(self) -> None:
        cancelled_ok = {e.job for e in self.events if e.kind == "cancel" and e.get("ok") and e.job}
        for job_id, spec in self.specs.items():
            job = self.finals.get(job_id)
            if job is None or job.status not in FINAL:
                continue
            if job_id in cancelled_ok and job.status is not JobStatus.CANCELLED:
                self.verdict.add(
                    "outcome",
                    f"job {job_id} was cancelled (cancel said yes) but ended {job.status.value}",
                    job_id,
                )
            if spec.get("b") in FAILS and job.status is JobStatus.COMPLETED:
                self.verdict.add(
                    "outcome", f"job {job_id} always fails ({spec.get('b')}) yet was completed", job_id
                )
            if job.status is JobStatus.DEAD and self._died_early(job):
                self.verdict.add(
                    "outcome",
                    f"job {job_id} is dead after attempt {job.attempt} of {job.max_retries + 1} "
                    f"(last error {job.last_error})",
                    job_id,
                )

    @staticmethod
    def _died_early(job: Job) -> bool:
        error = job.last_error
        if error is None or error.kind in KEPT_BY_LEASE_LOSS or error.kind == "SkipRetry":
            return False
        return job.attempt < job.max_retries + 1

    def _parents(self) -> None:
        first_start = {j: next((e.t for e in ev if e.kind == "start"), None) for j, ev in self.jobs.items()}
        for job_id, spec in self.specs.items():
            parents = spec.get("parents") or []
            started = first_start.get(job_id)
            if not parents or started is None:
                continue
            for parent in parents:
                ended = self._first_settle_bound(parent)
                final = self.finals.get(parent)
                if ended is not None and ended > started:
                    if final is not None and final.status is JobStatus.CANCELLED:
                        continue  # cancelled before it ran: the child may run ("run") without it
                    self.verdict.add(
                        "parents", f"job {job_id} started before its parent {parent} ended", job_id, parent
                    )
                elif (
                    spec.get("on_parent_failure") == "cancel"
                    and final is not None
                    and final.status is JobStatus.DEAD
                    and not self._completed_once(parent)
                ):
                    self.verdict.add(
                        "parents", f"job {job_id} ran though its parent {parent} died", job_id, parent
                    )

    def _first_settle_bound(self, job_id: str) -> float | None:
        """The earliest its first run can have been settled: its handler's end, or its start
        plus its timeout (a timed-out sync handler's thread ends later; the job is settled at
        the timeout). None when the history cannot tell (acked as a duplicate, never started)."""
        events = self.jobs.get(job_id, ())
        if any(e.kind == "settled" and e.get("outcome") == "duplicate" for e in events):
            return None
        ends = [e.t for e in events if e.kind == "end"]
        timeout = self.specs.get(job_id, {}).get("timeout")
        if timeout:
            ends += [e.t + float(timeout) for e in events if e.kind == "start"]
        return min(ends, default=None)

    def _completed_once(self, job_id: str) -> bool:
        return any(e.kind == "settled" and e.get("outcome") == "completed" for e in self.jobs.get(job_id, ()))

    def _refused(self) -> None:
        for e in self.events:
            stored = e.job is not None and self.finals.get(e.job) is not None
            if e.kind == "refused" and stored and e.job not in self.acknowledged:
                self.verdict.add(
                    "refused", f"job {e.job} was refused ({e.get('error')}) yet stored", str(e.job)
                )


def excerpt(events: list[Event], violation: Violation, *, limit: int = 40) -> list[str]:
    """The shortest history that shows ``violation``: the events of its jobs, and the faults
    and admin calls that happened between the first and the last of them."""
    mine = [e for e in events if e.job in violation.jobs]
    if not mine:
        return []
    first, last = mine[0].t, mine[-1].t
    context = [
        e for e in events if e.kind in ("fault", "pause", "resume", "requeue") and first <= e.t <= last
    ]
    lines = [e.line() for e in sorted(mine + context, key=lambda e: e.t)]
    return (
        lines
        if len(lines) <= limit
        else [*lines[: limit // 2], f"... {len(lines) - limit} more ...", *lines[-limit // 2 :]]
    )
