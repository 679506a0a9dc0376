"""``python -m examples.thumbnails [--dsn DSN]``: thumbnail a few images; one is too big for its timeout."""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

import pqueue
from examples._run import dsn_from_args, run_until_final
from examples.thumbnails.images import write_pgm
from examples.thumbnails.tasks import THUMB_SIZE, router


async def enqueue_and_work(dsn: str, photos: list[Path], poster: Path) -> list[pqueue.Job]:
    async with pqueue.AsyncClient(dsn, router=router) as client:
        jobs = [await client.enqueue("image:thumbnail", {"path": str(p)}) for p in photos]
        # A per-job timeout (overrides the task's 10 s), and no retries: a job past it is
        # stopped, and ends in the dead-letter queue with a JobTimeout error.
        jobs.append(
            await client.enqueue("image:thumbnail", {"path": str(poster)}, timeout=0.2, max_retries=0)
        )
    return await run_until_final(dsn, router, [j.id for j in jobs], concurrency=4)


def main(dsn: str, folder: Path) -> int:
    photos = [folder / f"photo-{n}.pgm" for n in range(4)]
    for n, photo in enumerate(photos):
        write_pgm(photo, 640, 480, seed=n)
    poster = folder / "poster.pgm"
    write_pgm(poster, 6000, 4500)  # 27 megapixels: most of a second of pure Python
    done = asyncio.run(enqueue_and_work(dsn, photos, poster))
    for job in done:
        outcome = job.result if job.status is pqueue.JobStatus.COMPLETED else job.last_error
        print(f"{Path(job.payload['path']).name:14} {job.status:10} {outcome}")
    thumbs_ok = all(
        j.status is pqueue.JobStatus.COMPLETED
        and Path(j.result["thumbnail"]).is_file()
        and max(j.result["size"]) <= THUMB_SIZE
        for j in done[:-1]
    )
    last = done[-1].last_error
    timed_out = done[-1].status is pqueue.JobStatus.DEAD and last is not None and last.kind == "JobTimeout"
    ok = thumbs_ok and timed_out
    print("OK: 4 thumbnails made, the poster stopped at its timeout" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    dsn = dsn_from_args(__doc__ or "")
    with tempfile.TemporaryDirectory(prefix="pqueue-thumbnails-") as folder:
        sys.exit(main(dsn, Path(folder)))
