"""``FaultContract``: what a backend must guarantee when connections, replies and clocks fail.

Everything above the seam (the client's enqueue retries, the worker's settler, its
recovery) resends a call whose reply it did not get. That is only safe if every write is
safe to send twice and every lease survives what a network and a restart do. These tests
drive a :class:`~pqueue.testing.faults.FaultyBroker` around the backend under test and
assert, per write, what the second send must do:

======================  ==========================================================
enqueue, reply lost     the resend (same job id) stores nothing new: one job
claim, reply lost       the job is leased to nobody who knows it: it is recovered
                        when the lease expires, as a recovery, not a failed attempt
ack, reply lost         the resend is refused; the job stays completed, in the run the
                        lease started (attempt, recoveries, started_at unchanged)
fail, reply lost        the resend is refused; one error recorded, one attempt burnt
release, reply lost     the resend is refused; the job is pending, no attempt burnt
extend, reply lost      the resend extends again; the job is not recovered
lost before any write   nothing was applied: the resend applies it once
lost after a write      the write stands; the next call's resend goes through
restart                 committed jobs survive and leases taken before still settle
clock jumps             forward: due work is due, expired leases recovered; back:
                        no lease expires, nothing runs early, nothing is lost
======================  ==========================================================

Run it like the rest of the contract: ``class TestFaults(FaultContract): pass`` in a test
module whose conftest provides ``pqueue_open_broker`` (see ``pqueue.testing.plugin``).
"""

from __future__ import annotations

import pytest

from pqueue.broker import FullBroker
from pqueue.clock import ManualClock
from pqueue.errors import BrokerUnavailable
from pqueue.job import JobStatus
from pqueue.spec import build_spec
from pqueue.testing.contract.helpers import LEASE, OpenAnother, boom, put, status_of, take, take_one, total
from pqueue.testing.faults.broker import Fault, FaultyBroker, InjectedFault

LOST = (Fault.BEFORE, Fault.REPLY)
"""The two ways a write's own call can fail: applied or not."""


@pytest.mark.asyncio
class FaultContract:
    """The broker contract under injected faults; every backend passes it."""

    @pytest.fixture
    def faulty(self, broker: FullBroker, clock: ManualClock, open_broker: OpenAnother) -> FaultyBroker:
        return FaultyBroker(broker, reopen=open_broker, clock=clock)

    # -- lost connections and lost replies, write by write -----------------------------

    @pytest.mark.parametrize("fault", LOST)
    async def test_enqueue_sent_again_stores_one_job(self, faulty: FaultyBroker, fault: Fault) -> None:
        b = faulty.broker
        spec = build_spec("fault:job", {"n": 1})
        faulty.arm("enqueue", fault)
        with pytest.raises(BrokerUnavailable):
            await b.enqueue([spec])
        [again] = await b.enqueue([spec])
        assert again.id == spec.id
        assert again.created is (fault is Fault.BEFORE), "a resent enqueue must not store a second job"
        assert await total(b) == 1
        assert (await b.get_job(spec.id)).payload == {"n": 1}

    @pytest.mark.parametrize("fault", LOST)
    async def test_claim_whose_reply_was_lost_is_recovered(self, faulty: FaultyBroker, fault: Fault) -> None:
        b = faulty.broker
        job_id = await put(b)
        faulty.arm("claim", fault)
        with pytest.raises(BrokerUnavailable):
            await take(b)
        if fault is Fault.REPLY:  # leased to a caller that never heard of it
            assert await status_of(b, job_id) is JobStatus.ACTIVE
            assert await take(b) == []
            faulty.jump(LEASE + 1)
            assert (await b.recover()).recovered == (job_id,)
        lease = await take_one(b)
        assert lease.job.id == job_id
        assert lease.job.recoveries == (1 if fault is Fault.REPLY else 0)
        assert lease.job.errors == (), "a lost claim reply is no handler failure"
        assert await b.ack([lease]) == [True]
        assert await status_of(b, job_id) is JobStatus.COMPLETED

    @pytest.mark.parametrize("fault", LOST)
    async def test_ack_sent_again_is_refused_and_the_job_stays_completed(
        self, faulty: FaultyBroker, fault: Fault
    ) -> None:
        b = faulty.broker
        job_id = await put(b)
        lease = await take_one(b)
        faulty.arm("ack", fault)
        with pytest.raises(BrokerUnavailable):
            await b.ack([lease], ['"done"'])
        again = await b.ack([lease], ['"done"'])
        assert again == [fault is Fault.BEFORE]
        job = await b.get_job(job_id)
        assert job.status is JobStatus.COMPLETED and job.result == "done"
        # what the worker checks to tell "my ack had landed" from "my lease was lost"
        mine = lease.job
        assert (job.attempt, job.recoveries, job.started_at) == (
            mine.attempt,
            mine.recoveries,
            mine.started_at,
        )
        faulty.jump(LEASE + 1)
        assert (await b.recover()).recovered == ()
        assert await total(b, [JobStatus.COMPLETED]) == 1

    @pytest.mark.parametrize("fault", LOST)
    async def test_fail_sent_again_burns_one_attempt(self, faulty: FaultyBroker, fault: Fault) -> None:
        b = faulty.broker
        job_id = await put(b, max_retries=3)
        lease = await take_one(b)
        faulty.arm("fail", fault)
        with pytest.raises(BrokerUnavailable):
            await b.fail(lease, boom("first"), retry_in=10)
        assert await b.fail(lease, boom("first"), retry_in=10) is (fault is Fault.BEFORE)
        job = await b.get_job(job_id)
        assert job.status is JobStatus.RETRY
        assert [e.message for e in job.errors] == ["first"], "one failure, recorded once"
        faulty.jump(11)
        again = await take_one(b)
        assert again.job.id == job_id and again.job.attempt == lease.job.attempt + 1

    @pytest.mark.parametrize("fault", LOST)
    async def test_release_sent_again_burns_no_attempt(self, faulty: FaultyBroker, fault: Fault) -> None:
        b = faulty.broker
        job_id = await put(b)
        lease = await take_one(b)
        faulty.arm("release", fault)
        with pytest.raises(BrokerUnavailable):
            await b.release([lease])
        assert await b.release([lease]) == [fault is Fault.BEFORE]
        assert await status_of(b, job_id) is JobStatus.PENDING
        again = await take_one(b)
        assert again.job.id == job_id and again.job.attempt == lease.job.attempt
        assert again.job.recoveries == 0 and again.job.errors == ()

    @pytest.mark.parametrize("fault", LOST)
    async def test_extend_sent_again_keeps_the_lease(self, faulty: FaultyBroker, fault: Fault) -> None:
        b = faulty.broker
        job_id = await put(b)
        lease = await take_one(b, lease_for=LEASE)
        faulty.jump(LEASE * 0.8)
        faulty.arm("extend", fault)
        with pytest.raises(BrokerUnavailable):
            await b.extend([lease], lease_for=LEASE)
        assert await b.extend([lease], lease_for=LEASE) == [True]
        faulty.jump(LEASE * 0.8)  # past the first lease, within the extension
        assert (await b.recover()).recovered == ()
        assert await b.ack([lease]) == [True]
        assert await status_of(b, job_id) is JobStatus.COMPLETED

    async def test_a_connection_lost_after_a_write_fails_only_the_next_call(
        self, faulty: FaultyBroker
    ) -> None:
        b = faulty.broker
        job_id = await put(b)
        faulty.lose_after("claim")
        lease = await take_one(b)  # answered; the connection drops behind it
        with pytest.raises(InjectedFault) as caught:
            await b.ack([lease])
        assert not caught.value.applied
        assert await status_of(b, job_id) is JobStatus.ACTIVE
        assert await b.ack([lease]) == [True]
        assert faulty.pending == []

    # -- restarts ------------------------------------------------------------------------

    async def test_a_restart_keeps_committed_jobs_and_held_leases(self, faulty: FaultyBroker) -> None:
        b = faulty.broker
        running = await put(b, payload="running")
        waiting = await put(b, payload="waiting")
        later = await put(b, payload="later", delay=60)
        lease = await take_one(b)
        assert lease.job.id == running
        await faulty.restart()
        assert await b.ack([lease]) == [True], "a lease taken before a restart still settles"
        assert await status_of(b, running) is JobStatus.COMPLETED
        assert await status_of(b, later) is JobStatus.SCHEDULED
        assert (await take_one(b)).job.id == waiting
        faulty.jump(61)
        assert (await take_one(b)).job.id == later
        assert faulty.restarts == 1

    async def test_a_lease_lost_in_a_restart_is_recovered(self, faulty: FaultyBroker) -> None:
        b = faulty.broker
        job_id = await put(b)
        await take_one(b)
        await faulty.restart()  # the worker that held it is gone too
        faulty.jump(LEASE + 1)
        assert (await b.recover()).recovered == (job_id,)
        again = await take_one(b)
        assert again.job.id == job_id and again.job.recoveries == 1

    # -- clock jumps ------------------------------------------------------------------------

    async def test_a_forward_jump_makes_everything_due_at_once(self, faulty: FaultyBroker) -> None:
        b = faulty.broker
        held = await put(b, payload="held")
        soon = await put(b, payload="soon", delay=5)
        tomorrow = await put(b, payload="tomorrow", delay=86_400)
        lease = await take_one(b)
        assert lease.job.id == held
        faulty.jump(2 * 86_400)
        assert (await b.recover()).recovered == (held,)
        ids = {lease.job.id for lease in await take(b, limit=10)}
        assert ids == {held, soon, tomorrow}

    async def test_a_backward_jump_expires_no_lease_and_runs_nothing_early(
        self, faulty: FaultyBroker
    ) -> None:
        b = faulty.broker
        held = await put(b, payload="held")
        due = await put(b, payload="due")
        later = await put(b, payload="later", delay=10)
        lease = await take_one(b)
        assert lease.job.id == held
        faulty.jump(-3600)
        assert (await b.recover()).recovered == (), "stepping back expires no lease"
        assert await b.ack([lease]) == [True]
        # A job that was due may wait until the clock is back where it was (Postgres and
        # memory order by run_at); it must not be lost, and nothing may run early.
        early = [lease.job.id for lease in await take(b, limit=10)]
        assert later not in early, "a job scheduled for later is not due after a step back"
        faulty.jump(3600)
        rest = [lease.job.id for lease in await take(b, limit=10)]
        assert sorted(early + rest) == sorted([due]), "the due job is claimable once time catches up"
        assert await status_of(b, later) is JobStatus.SCHEDULED
        faulty.jump(11)
        assert [lease.job.id for lease in await take(b)] == [later]
