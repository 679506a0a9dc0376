"""redis-benchmark ceiling of pqueue's own single-enqueue script call, one client.

Builds the exact ``EVALSHA enqueue.lua`` command the sync ``Client`` sends for one
no-op job (pqueue's own call builder), puts redis-benchmark's ``__rand_int__`` where the
job id goes, and runs it with ``redis-benchmark -c 1 -P 1`` (one client, one call at a
time): what a C client with no validation, no id making and no Python at all gets from
the same script. The Redis twin of ``ceiling_enqueue_one.py`` (pgbench). Keys go under a
throw-away prefix, deleted afterwards.

    python bench/ceiling_enqueue_redis.py --url redis://127.0.0.1:6379/3 --n 20000 --runs 3
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import uuid
from urllib.parse import urlsplit

from redis import Redis

from pqueue.brokers.redis import calls
from pqueue.brokers.redis.keys import queue_keys
from pqueue.brokers.redis.scripts import SOURCES
from pqueue.spec import build_spec


def command(prefix: str) -> list[str]:
    """The script call of one new no-op job, its id replaced by ``__rand_int__``."""
    spec = build_spec("bench:noop", 1763912345.123456)
    call = calls.enqueue(queue_keys(prefix, "default"), [spec], "", f"{prefix}:wake", f"{prefix}:handoff:")
    return [str(part).replace(spec.id, "id-__rand_int__") for part in call.command()]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--url", default="redis://127.0.0.1:6379/3")
    parser.add_argument("--n", type=int, default=20000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    url = urlsplit(args.url)
    db = (url.path or "/0").lstrip("/") or "0"
    admin = Redis.from_url(args.url)
    admin.script_load(SOURCES["enqueue"])
    rates = []
    for _ in range(args.runs):
        prefix = f"pqceil{uuid.uuid4().hex[:8]}"
        try:
            out = subprocess.run(
                ["redis-benchmark", "-h", url.hostname or "127.0.0.1", "-p", str(url.port or 6379),
                 "--dbnum", db, "-c", "1", "-P", "1", "-n", str(args.n), "-r", "100000000000", "-q",
                 *command(prefix)],
                check=True, capture_output=True, text=True,
            ).stdout  # fmt: skip
            rates.append(float(re.findall(r"([\d.]+) requests per second", out)[-1]))
        finally:
            keys = list(admin.scan_iter(match=f"{prefix}:*", count=1000))
            for start in range(0, len(keys), 1000):
                admin.unlink(*keys[start : start + 1000])
    admin.close()
    print(
        f"redis-benchmark enqueue.lua, 1 client: {', '.join(f'{r:,.0f}' for r in rates)} jobs/s; "
        f"median {statistics.median(rates):,.0f}",
        flush=True,
    )


if __name__ == "__main__":
    main()
