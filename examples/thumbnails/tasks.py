"""The handler: read an image from the path in the payload, shrink it, write the thumbnail next to it.

A ``def`` handler runs on a worker thread, so the event loop (claims, heartbeats, acks)
keeps going while it computes. Threads share one GIL: for more CPU than one core, run
more worker processes (``pqueue worker ... --processes 4``), not more threads.
"""

from __future__ import annotations

from pathlib import Path

import pqueue
from examples.thumbnails.images import read_pgm, shrink

router = pqueue.Router()

THUMB_SIZE = 64


@router.task("image:thumbnail", queue="images", timeout=10, max_retries=2)
def make_thumbnail(job: pqueue.Job) -> dict[str, object]:
    """Payload: ``{"path": ...}`` -- a reference to the file, never its bytes (jobs stay small)."""
    source = Path(job.payload["path"])
    width, height, pixels = read_pgm(source)
    out_w, out_h, thumb = shrink(width, height, pixels, THUMB_SIZE)
    target = source.with_suffix(".thumb.pgm")
    target.write_bytes(b"P5\n%d %d\n255\n" % (out_w, out_h) + thumb)
    return {"thumbnail": str(target), "size": [out_w, out_h]}
