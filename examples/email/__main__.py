"""``python -m examples.email [--dsn DSN]``: send a welcome email and charge an order twice over."""

from __future__ import annotations

import asyncio
import sys

import pqueue
from examples._run import dsn_from_args, run_until_final
from examples.email.tasks import CHARGES, FLAKY_TRIES, OUTBOX, router


async def main(dsn: str) -> int:
    async with pqueue.AsyncClient(dsn, router=router) as client:
        email = await client.enqueue("email:send", {"to": "ada@example.com", "subject": "Welcome!"})
        # The shop's checkout sends the charge, then sends it again (a retried HTTP request):
        # one idempotency key per order makes the second delivery a no-op.
        order = {"order": "order-7", "cents": 1999}
        charges = [
            await client.enqueue("billing:charge", order, idempotency_key="charge:order-7") for _ in range(2)
        ]
    jobs = await run_until_final(dsn, router, [email.id, *(c.id for c in charges)])
    for job in jobs:
        print(f"{job.type:15} {job.status:10} attempt {job.attempt}  result {job.result}")
    print(f"outbox: {OUTBOX}")
    print(f"charges: {dict(CHARGES)}")
    sent = jobs[0].status is pqueue.JobStatus.COMPLETED and jobs[0].attempt == FLAKY_TRIES + 1
    once = CHARGES["order-7"] == 1 and all(j.status is pqueue.JobStatus.COMPLETED for j in jobs[1:])
    print("OK: the email went out after retries, the order was charged once" if sent and once else "FAILED")
    return 0 if sent and once else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main(dsn_from_args(__doc__ or ""))))
