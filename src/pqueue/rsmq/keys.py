"""Every Redis key and channel of RSMQ's layout, from one place.

``{ns}:QUEUES`` is the set of queue names, ``{ns}:{qname}:Q`` a queue's hash (settings,
totals and each message's body, ``:rc`` and ``:fr``), ``{ns}:{qname}`` its sorted set of
ids scored by the visible-at time in ms, ``{ns}:rt:{qname}`` its realtime channel. The
keys carry no hash tag, so the layout cannot live on Redis Cluster (ADR 0144).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Keys:
    """The keys of namespace ``ns``."""

    ns: str

    @property
    def queues(self) -> str:
        return f"{self.ns}:QUEUES"

    def messages(self, qname: str) -> str:
        """The sorted set of a queue's ids by visible-at time (ms)."""
        return f"{self.ns}:{qname}"

    def queue(self, qname: str) -> str:
        """The hash of a queue's settings, totals and messages."""
        return f"{self.ns}:{qname}:Q"

    def channel(self, qname: str) -> str:
        """Where a realtime sender publishes the queue's message count."""
        return f"{self.ns}:rt:{qname}"

    def pattern(self) -> str:
        """A SCAN pattern for every key of the namespace (tests clean up with it)."""
        return f"{self.ns}:*"
