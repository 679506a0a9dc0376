"""Which leases of a fenced batch write landed, shared by the SQL backends.

A batch of acks, releases or extends may name one job twice: a worker that lost a lease
(a stall, a freeze) and claimed the same job again holds both the stale lease and the
current one. The fenced statement changes the row once, for the lease whose token is the
job's current one; only that lease may be told it landed. Matching the rows that came
back by job id alone credited whichever lease came first in the batch: the stale one was
reported completed (twice, with the current one's check) or kept alive by the heartbeat
while the current one was reported lost.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pqueue.job import Lease


def landed(leases: Sequence[Lease], written: Iterable[tuple[str, str]]) -> list[bool]:
    """Per lease, whether the fenced write landed for it: its job id and token came back
    in ``written`` (pairs of job id and token, as text). A lease given twice lands once."""
    left = {(str(job_id), str(token)) for job_id, token in written}
    out: list[bool] = []
    for lease in leases:
        key = (lease.job.id, str(lease.token))
        out.append(key in left)
        left.discard(key)
    return out
