"""``python -m examples.web_producer [--dsn DSN]``: three signups over HTTP (one refused), their emails."""

from __future__ import annotations

import asyncio
import sys

import httpx

import pqueue
from examples._run import dsn_from_args, run_until_final
from examples.web_producer.app import create_app
from examples.web_producer.tasks import SENT, router

SIGNUPS = ["ada@example.com", "grace@example.com", "ada@example.com"]


async def main(dsn: str) -> int:
    app = create_app(dsn)
    job_ids = []
    # The app in this process, over HTTP through httpx's ASGI transport; uvicorn serves the same app.
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://example") as http,
    ):
        for email in SIGNUPS:
            response = await http.post("/signups", json={"email": email})
            print(f"POST /signups {email:18} -> {response.status_code} {response.json()}")
            if response.status_code == 202:
                job_ids.append(response.json()["job_id"])
    jobs = await run_until_final(dsn, router, job_ids)
    async with pqueue.AsyncClient(dsn) as client:
        stored = sum((await client.stats()).totals.values())
    print(f"jobs stored: {stored}, emails sent: {SENT}")
    ok = all(j.status is pqueue.JobStatus.COMPLETED for j in jobs) and sorted(SENT) == sorted(set(SIGNUPS))
    ok = ok and stored == len(set(SIGNUPS))  # the refused signup left no job behind
    print("OK: two signups, two emails; the refused one left no job" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main(dsn_from_args(__doc__ or ""))))
