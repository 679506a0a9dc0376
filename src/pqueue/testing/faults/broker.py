"""``FaultyBroker``: a broker wrapper that loses connections, replies and itself on cue.

It sits at the broker seam, so it works on any backend, in memory or over a network, and
injects what a network and a server do to a broker's callers, deterministically:

- :meth:`~FaultyBroker.lose_before` -- the connection is lost before the call reached the
  server: nothing was written, the caller gets :class:`~pqueue.errors.BrokerUnavailable`.
- :meth:`~FaultyBroker.lose_reply` -- the call was applied and committed, then its reply was
  lost: the write happened, yet the caller gets ``BrokerUnavailable`` and will send it again.
- :meth:`~FaultyBroker.lose_after` -- the call is applied and answered, and the connection
  drops right after: the *next* call (whatever it is) fails before reaching the server.
- :meth:`~FaultyBroker.restart` -- the broker is closed and opened again (a restarted
  process, or a server restart the client reconnects through): what was committed must
  survive, and leases taken before must still settle.
- :meth:`~FaultyBroker.jump` -- the clock steps forward or back (NTP, a VM resumed).

What a backend must do under these is :class:`pqueue.testing.faults.FaultContract`.
The connection-level versions (killed sockets, real server restarts) are the backends'
own tests; these are the consequences every caller above the seam has to live with.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, cast

from pqueue.broker import FullBroker
from pqueue.clock import ManualClock
from pqueue.errors import BrokerUnavailable

Opener = Callable[[], Awaitable[FullBroker]]
"""Opens another broker on the same jobs (the plugin's ``open_broker`` fixture)."""


class Fault(StrEnum):
    """Where a lost connection strikes one call."""

    BEFORE = "before"
    """Lost before the call reached the server: nothing applied."""
    REPLY = "reply"
    """The call applied and committed; its reply lost."""
    AFTER = "after"
    """The call applied and answered; the connection gone for the next call."""


class InjectedFault(BrokerUnavailable):
    """The ``BrokerUnavailable`` a :class:`FaultyBroker` raises; ``applied`` says whether
    the call behind it was carried out (a lost reply) or not (lost before)."""

    def __init__(self, method: str, fault: Fault, *, applied: bool) -> None:
        what = "its reply was lost" if applied else "the connection was lost before it was sent"
        super().__init__(f"injected fault: {method}() {what}")
        self.method, self.fault, self.applied = method, fault, applied


@dataclass
class _Armed:
    method: str
    fault: Fault


class FaultyBroker:
    """Wraps ``inner`` (any :class:`~pqueue.broker.FullBroker`); every attribute passes
    through, and calls of the methods a fault is armed for fail as told, once each.

    ``reopen`` opens a fresh broker on the same jobs, for :meth:`restart`; ``clock`` is the
    :class:`~pqueue.clock.ManualClock` the brokers run on, for :meth:`jump`. Use
    :attr:`broker` where a ``FullBroker`` is expected (it is this wrapper, typed).
    """

    def __init__(
        self, inner: FullBroker, *, reopen: Opener | None = None, clock: ManualClock | None = None
    ) -> None:
        self.inner = inner
        self._reopen = reopen
        self._clock = clock
        self._armed: list[_Armed] = []
        self._dropped = False
        self.injected: list[InjectedFault] = []
        """Every fault raised so far, in order."""
        self.restarts = 0

    @property
    def broker(self) -> FullBroker:
        """This wrapper, typed as the broker it stands for."""
        return cast(FullBroker, self)

    # -- arming ---------------------------------------------------------------------------

    def lose_before(self, method: str) -> None:
        """The next call of ``method`` fails unapplied (the connection was lost before it)."""
        self._arm(method, Fault.BEFORE)

    def lose_reply(self, method: str) -> None:
        """The next call of ``method`` is applied, then fails (its reply was lost)."""
        self._arm(method, Fault.REPLY)

    def lose_after(self, method: str) -> None:
        """The next call of ``method`` succeeds; the call after it, of any method, fails unapplied."""
        self._arm(method, Fault.AFTER)

    def arm(self, method: str, fault: Fault | str) -> None:
        """Arm ``fault`` (a :class:`Fault` or its value) for the next call of ``method``."""
        self._arm(method, Fault(fault))

    def _arm(self, method: str, fault: Fault) -> None:
        if not inspect.iscoroutinefunction(getattr(self.inner, method, None)):
            raise ValueError(f"{type(self.inner).__name__} has no async method {method!r} to fault")
        self._armed.append(_Armed(method, fault))

    @property
    def pending(self) -> list[tuple[str, Fault]]:
        """Faults armed and not struck yet (a test asserts this is empty)."""
        return [(armed.method, armed.fault) for armed in self._armed]

    # -- whole-broker faults ----------------------------------------------------------------

    async def restart(self) -> None:
        """Close the broker and open a fresh one on the same jobs, as a restart would."""
        if self._reopen is None:
            raise RuntimeError("FaultyBroker(reopen=...) is needed to restart")
        await self.inner.close()
        self.inner = await self._reopen()
        self._dropped = False
        self.restarts += 1

    def jump(self, seconds: float) -> float:
        """Step the clock by ``seconds`` (negative: back in time); returns the new now."""
        if self._clock is None:
            raise RuntimeError("FaultyBroker(clock=...) is needed to jump")
        now = self._clock.now() + seconds
        self._clock.set(now)
        return now

    # -- the pass-through -------------------------------------------------------------------

    def __getattr__(self, name: str) -> Any:
        target = getattr(self.inner, name)
        if not inspect.iscoroutinefunction(target):
            return target

        async def call(*args: Any, **kwargs: Any) -> Any:
            if self._dropped:
                self._dropped = False
                raise self._raise(name, Fault.AFTER, applied=False)
            armed = next((a for a in self._armed if a.method == name), None)
            if armed is None:
                return await target(*args, **kwargs)
            self._armed.remove(armed)
            if armed.fault is Fault.BEFORE:
                raise self._raise(name, Fault.BEFORE, applied=False)
            result = await target(*args, **kwargs)
            if armed.fault is Fault.AFTER:
                self._dropped = True
                return result
            raise self._raise(name, Fault.REPLY, applied=True)

        return call

    def _raise(self, method: str, fault: Fault, *, applied: bool) -> InjectedFault:
        error = InjectedFault(method, fault, applied=applied)
        self.injected.append(error)
        return error
