"""``pqueue worker --processes N``: a parent that runs N worker processes and watches them.

Each child is a full ``pqueue worker`` process (its own interpreter: no fork of a
process that already runs threads and event loops). Children run in their own process
group, so a terminal's Ctrl-C reaches them once, through the parent: the parent
forwards SIGTERM/SIGINT to every child, the first to drain and a second to force
exit. A child that dies while the pool is running is restarted, with a back-off when
it keeps dying young. Children also stop if the parent disappears.

A signal that arrives while children are being started stops the start-up: no child is
started after it, and a child whose start it interrupted still gets it. Exit codes of
:meth:`Supervisor.run`: 0 when every child stopped cleanly after the signal (drained,
or ended by the forwarded signal itself before it had installed its handlers, so before
it held any job); 1 when a child kept dying right after starting (the pool gave up);
3 when a child stopped on a broker error retrying cannot heal (a damaged SQLite file, a
schema dropped: the whole pool stops rather than restart children into it; ADR 0158);
else the first non-zero exit code of a child, e.g. 143 (128 + SIGTERM) for a child
forced out by a second signal.

The pool's size can change while it runs (:meth:`Supervisor.resize`, called by
:mod:`pqueue.autoscaler` for ``--autoscale MIN:MAX``): the watch loop starts children
into free slots, or retires the newest ones. A retired child gets one SIGTERM and drains
like any stopping worker (its running jobs finish, its prefetched ones go back unrun, so
no attempt is burnt); it is not restarted, whatever its exit, and a pool-wide stop does
not send it the same signal again (a second one would force it out), only a second stop does.
"""

from __future__ import annotations

import logging
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import FrameType

from pqueue.errors import EXIT_BROKER_UNUSABLE

log = logging.getLogger("pqueue.supervisor")

POLL = 0.2
YOUNG = 10.0
"""A child that dies within this many seconds of its start counts as crash-looping."""
MAX_BACKOFF = 30.0
LIVE_WITHIN = 5.0
""":meth:`Supervisor.responsive` is False once the watch loop has not turned for this long."""
GIVE_UP_AFTER = 5
"""Consecutive young deaths of one child after which the whole pool stops (exit 1): a
worker that cannot start (bad DSN, broken import) is for the orchestrator to see."""


@dataclass
class _Child:
    slot: int
    proc: subprocess.Popen[bytes]
    started: float = field(default_factory=time.monotonic)
    failures: int = 0
    retiring: bool = False


class Supervisor:
    """Run ``command`` (a worker command line) ``processes`` times, with ``env`` as their
    environment if given; :meth:`run` returns the exit code. ``on_exit`` is called with
    the pid of every child that exited (the pool's metrics forget its live gauges)."""

    def __init__(
        self,
        command: Sequence[str],
        processes: int,
        *,
        env: Mapping[str, str] | None = None,
        on_exit: Callable[[int], None] = lambda pid: None,
    ) -> None:
        if processes < 1:
            raise ValueError("processes must be >= 1")
        self.command = list(command)
        self.env = dict(env) if env is not None else None  # None: the children inherit ours
        self.processes = processes
        self.target = processes
        """The size the pool is kept at (:meth:`resize`); ``processes`` is the size it starts at."""
        self.signals = 0
        self.gave_up = False
        self.unusable = False
        """A child stopped on a broker error retrying cannot heal: the pool stopped (exit 3)."""
        self._children: dict[int, _Child] = {}
        self._retiring: dict[int, _Child] = {}  # pid -> a child told to drain and leave
        self._restart_at: dict[int, tuple[float, int]] = {}  # slot -> (when, failures)
        self._forwarded: set[int] = set()  # signal numbers sent to the children
        self._spawning = False
        self._deferred: list[int] = []  # signals that arrived while a child was being started
        self._on_exit = on_exit
        self._ticked: float | None = None  # when the watch loop last turned (None: not running)

    def responsive(self) -> bool:
        """True while the pool runs and its watch loop turns (a liveness probe, from any thread)."""
        ticked = self._ticked
        return ticked is not None and time.monotonic() - ticked < LIVE_WITHIN

    @property
    def size(self) -> int:
        """Processes in the pool now: running (retiring ones excluded) or waiting for their restart."""
        return len(self._children) + len(self._restart_at)

    def resize(self, processes: int) -> bool:
        """Keep the pool at ``processes`` (>= 1) from the watch loop's next turn (any thread);
        False, and nothing changes, once the pool is stopping."""
        if processes < 1:
            raise ValueError("processes must be >= 1")
        if self.signals:
            return False
        self.target = processes
        return True

    def run(self) -> int:
        previous = {sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
        self._ticked = time.monotonic()
        try:
            for slot in range(self.processes):
                if self.signals:
                    log.info(
                        "signal received while starting: %d of %d worker processes started",
                        slot,
                        self.processes,
                    )
                    break
                self._spawn(slot, failures=0)
            else:
                log.info("supervising %d worker processes", self.processes)
            return self._watch()
        finally:
            self._ticked = None
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def _spawn(self, slot: int, *, failures: int) -> None:
        # A signal handled while the child is being started (its handler runs between any
        # two bytecodes, e.g. after Popen returns but before the child is registered) is
        # deferred to the end, when the new child is registered and gets it too.
        self._spawning = True
        try:
            if self.signals:
                return
            proc = subprocess.Popen(self.command, start_new_session=True, env=self.env)
            self._children[slot] = _Child(slot, proc, failures=failures)
            log.info("worker process %d started (pid %d)", slot + 1, proc.pid)
        finally:
            self._spawning = False
            deferred, self._deferred = self._deferred, []
            for signum in deferred:
                self._forward(signum)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.signals += 1
        self._restart_at.clear()
        if self._spawning:
            self._deferred.append(signum)
        else:
            self._forward(signum)

    def _forward(self, signum: int) -> None:
        self._forwarded.add(signum)
        retiring = list(self._retiring.values()) if self.signals > 1 else []  # they drain already
        for child in [*self._children.values(), *retiring]:
            if child.proc.poll() is None:
                child.proc.send_signal(signum)

    def _apply_target(self) -> None:
        """Start or retire children until the pool is :attr:`target` strong."""
        while self.size < self.target and not self.signals:
            taken = self._children.keys() | self._restart_at.keys()
            self._spawn(min(set(range(self.size + 1)) - taken), failures=0)
        while self.size > self.target:
            slot = max(self._children.keys() | self._restart_at.keys())
            if self._restart_at.pop(slot, None) is not None:
                continue  # it was waiting for its restart: it stays stopped
            child = self._children.pop(slot)
            child.retiring = True
            self._retiring[child.proc.pid] = child
            if child.proc.poll() is None:
                child.proc.send_signal(signal.SIGTERM)
            log.info("worker process %d (pid %d) retiring: it drains and exits", slot + 1, child.proc.pid)

    def _retired(self, child: _Child, code: int) -> None:
        """A retired child exited: never restarted, whatever its exit code."""
        del self._retiring[child.proc.pid]
        self._notify_exit(child)
        if code == 0:
            log.info("worker process %d (pid %d) retired", child.slot + 1, child.proc.pid)
        else:  # e.g. SIGKILL: its jobs come back when their leases expire
            log.warning(
                "worker process %d (pid %d) exited with %d while retiring; not restarted",
                child.slot + 1,
                child.proc.pid,
                code,
            )

    def _notify_exit(self, child: _Child) -> None:
        try:
            self._on_exit(child.proc.pid)
        except Exception:  # a bookkeeping hook must not end the pool
            log.exception("on_exit hook failed for pid %d; ignored", child.proc.pid)

    def _died(self, child: _Child, code: int, now: float) -> None:
        """A child exited while the pool runs: restart it (after a back-off if it died young),
        or stop the pool when it keeps dying right after starting."""
        slot = child.slot
        if code == EXIT_BROKER_UNUSABLE:
            log.critical(
                "worker process %d (pid %d) found the broker unusable (exit code %d; its log says why); "
                "stopping all worker processes",
                slot + 1,
                child.proc.pid,
                code,
            )
            self.unusable = True
            self._on_signal(signal.SIGTERM, None)
            return
        failures = child.failures + 1 if now - child.started < YOUNG else 0
        if failures >= GIVE_UP_AFTER:
            log.critical(
                "worker process %d died %d times in a row right after starting (last exit code %d); "
                "stopping all worker processes",
                slot + 1,
                failures,
                code,
            )
            self.gave_up = True
            self._on_signal(signal.SIGTERM, None)
            return
        delay = min(MAX_BACKOFF, 0.5 * 2**failures) if failures else 0.0
        log.error(
            "worker process %d (pid %d) exited with %d; restarting in %.1fs",
            slot + 1,
            child.proc.pid,
            code,
            delay,
        )
        self._restart_at[slot] = (now + delay, failures)

    def _stop_code(self, slot: int, code: int) -> int:
        """A child's exit code once the pool is stopping, in the shell's convention."""
        if code >= 0:
            return code
        if -code in self._forwarded:  # ended by our signal's default action: it had not started serving
            log.info("worker process %d stopped by the signal before it could install its handlers", slot + 1)
            return 0
        return 128 - code  # -N: killed by signal N

    def _watch(self) -> int:
        codes: dict[int, int] = {}  # slot (a retired child: -pid) -> exit code, once the pool stops
        while self._children or self._retiring or (self._restart_at and not self.signals):
            now = self._ticked = time.monotonic()
            for child in list(self._retiring.values()):
                code = child.proc.poll()
                if code is not None:
                    self._retired(child, code)
                    if self.signals:
                        codes[-child.proc.pid] = self._stop_code(child.slot, code)
            for slot, child in list(self._children.items()):
                code = child.proc.poll()
                if code is None:
                    continue
                del self._children[slot]
                self._notify_exit(child)
                if self.signals:
                    codes[slot] = self._stop_code(slot, code)
                else:
                    self._died(child, code, now)
            for slot, (when, failures) in list(self._restart_at.items()):
                if when <= now and not self.signals:
                    self._restart_at.pop(slot, None)  # a signal handler may have cleared it meanwhile
                    self._spawn(slot, failures=failures)
            if not self.signals:
                self._apply_target()
            time.sleep(POLL)
        return self._pool_code(codes)

    def _pool_code(self, codes: dict[int, int]) -> int:
        """The pool's exit code, once every child stopped (``codes``: theirs, by slot)."""
        bad = [code for code in codes.values() if code != 0]
        log.info("all worker processes stopped%s", f" (exit codes {sorted(codes.values())})" if bad else "")
        if self.gave_up:
            return 1
        if self.unusable:
            return EXIT_BROKER_UNUSABLE
        return bad[0] if bad else 0
