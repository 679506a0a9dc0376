"""Server time of enqueue.lua for one plain job per call, as Redis itself counts it.

Calls the enqueue script (``scripts.SOURCES["enqueue"]``, or the one of a git revision
with ``--rev``) with the KEYS and ARGV the broker sends for one immediate job without
options (``calls.enqueue``, server clock), ``--n`` times per round: pipelined in batches
of ``--batch``, then one call at a time. Each round starts from an empty queue, resets
the server's command statistics (``CONFIG RESETSTAT``: server-wide, so run it on a dev or
bench server) and prints the server's microseconds per EVALSHA. For scale it also times
``return 1`` and the _lib.lua prelude followed by ``return 1``.

``--scheduled K`` first puts K jobs due in an hour in the scheduled set (a queue that
uses delays); ``--retry K`` does the same for the retry set.

A call count other than the expected one means another client ran EVALSHA meanwhile;
the round is then marked and its figure is not to be trusted. The script deletes its
own key prefix (in the given database) after every round.

    .venv/bin/python bench/redis_enqueue_script_cost.py
    .venv/bin/python bench/redis_enqueue_script_cost.py --rev HEAD   # the committed script
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import subprocess
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

import redis

from pqueue.brokers.redis import calls, scripts
from pqueue.brokers.redis.keys import global_keys, queue_keys
from pqueue.spec import build_spec

LUA_DIR = "src/pqueue/brokers/redis/lua"
Call = tuple[list[str], list[scripts.Arg]]
"""One enqueue.lua call: KEYS and ARGV."""
QUEUE = "bench"


def source_at(rev: str | None, lua_dir: str | None) -> tuple[str, str]:
    """(prelude, enqueue source) of the working tree, of git revision ``rev`` or of the
    _lib.lua and enqueue.lua in ``lua_dir`` (a variant under trial)."""
    if rev is None and lua_dir is None:
        return scripts._read("_lib"), scripts.SOURCES["enqueue"]
    root = Path(__file__).resolve().parent.parent

    def show(name: str) -> str:
        if lua_dir is not None:
            return (Path(lua_dir) / f"{name}.lua").read_text(encoding="utf-8")
        return subprocess.run(
            ["git", "show", f"{rev}:{LUA_DIR}/{name}.lua"],
            cwd=root,
            check=True,
            capture_output=True,
            text=True,
        ).stdout

    lib = show("_lib")
    return lib, f"{lib}\n{show('enqueue')}"  # as scripts._load_sources joins them


class Bench:
    def __init__(self, server: redis.Redis, n: int, batch: int, scheduled: int, retry: int) -> None:
        self.server, self.n, self.batch = server, n, batch
        self.scheduled, self.retry = scheduled, retry
        self.prefix = f"pqesc{uuid.uuid4().hex[:8]}"
        self.k = queue_keys(self.prefix, QUEUE)
        g = global_keys(self.prefix)
        self.calls: list[Call] = []
        for i in range(n):
            call = calls.enqueue(
                self.k,
                [build_spec("bench:noop", {"i": i}, queue=QUEUE)],
                "",
                g.wake_channel,
                g.handoff_prefix,
            )
            self.calls.append((list(call.keys), list(call.args)))

    def clean(self) -> None:
        for key in self.server.scan_iter(match=f"{self.prefix}:*", count=1000):
            self.server.delete(key)

    def prepare(self) -> None:
        """An empty queue, but for the optional future jobs in scheduled / retry."""
        self.clean()
        later = int(time.time() * 1000) + 3_600_000
        for zkey, count in ((self.k.scheduled, self.scheduled), (self.k.retry, self.retry)):
            for i in range(count):
                job = f"{zkey.rsplit(':', 1)[1]}-{i}"
                self.server.hset(self.k.job(job), mapping={"status": "scheduled", "seq": i, "run_at": later})
                self.server.zadd(zkey, {job: later})

    def measure(self, sha: str, pipelined: bool, argv: Callable[[int], Call]) -> tuple[float, int]:
        """Server usec per EVALSHA over n calls, and how many calls the server counted."""
        self.prepare()
        self.server.config_resetstat()
        if pipelined:
            for start in range(0, self.n, self.batch):
                pipe = self.server.pipeline(transaction=False)
                for i in range(start, min(self.n, start + self.batch)):
                    keys, args = argv(i)
                    pipe.evalsha(sha, len(keys), *keys, *args)
                pipe.execute()
        else:
            for i in range(self.n):
                keys, args = argv(i)
                self.server.evalsha(sha, len(keys), *keys, *args)
        stats = self.server.info("commandstats").get("cmdstat_evalsha", {})
        self.clean()
        return float(stats.get("usec_per_call", "nan")), int(stats.get("calls", 0))


def load(server: redis.Redis, source: str) -> str:
    sha = hashlib.sha1(source.encode()).hexdigest()
    assert server.script_load(source) == sha
    return sha


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--dsn", default="redis://127.0.0.1:6379/3", help="a Redis URL (its database is used)"
    )
    parser.add_argument("--n", type=int, default=5000, help="script calls per round")
    parser.add_argument("--batch", type=int, default=500, help="calls per pipeline")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rev", help="measure the scripts of this git revision instead of the working tree")
    parser.add_argument("--lua-dir", help="measure _lib.lua and enqueue.lua of this directory instead")
    parser.add_argument("--scheduled", type=int, default=0, help="future jobs in the scheduled set")
    parser.add_argument("--retry", type=int, default=0, help="future jobs in the retry set")
    parser.add_argument("--no-reference", action="store_true", help="skip the 'return 1' references")
    args = parser.parse_args()
    if urlsplit(args.dsn).query:
        parser.error("give the DSN without options: the script picks its own key prefix")

    server = redis.Redis.from_url(args.dsn)
    bench = Bench(server, args.n, args.batch, args.scheduled, args.retry)
    if args.rev and args.lua_dir:
        parser.error("give --rev or --lua-dir, not both")
    lib, enqueue = source_at(args.rev, args.lua_dir)
    plain = bench.calls.__getitem__
    rows: list[tuple[str, Callable[[int], Call], str]] = []
    if not args.no_reference:
        rows.append(("return 1", plain, load(server, "return 1")))
        rows.append(("_lib + return 1", plain, load(server, f"{lib}\nreturn 1")))
    rows.append((f"enqueue.lua ({args.rev or args.lua_dir or 'working tree'})", plain, load(server, enqueue)))
    state = f"scheduled={args.scheduled} retry={args.retry}"
    print(f"server usec per EVALSHA, {args.n} calls per round, one plain job per call, {state}")
    try:
        for label, argv, sha in rows:
            for pipelined in (True, False):
                mode = f"pipelined x{args.batch}" if pipelined else "one at a time"
                figures, clean = [], []
                for _ in range(args.rounds):
                    usec, counted = bench.measure(sha, pipelined, argv)
                    figures.append(f"{usec:.2f}" + ("" if counted == args.n else f" (!{counted} calls)"))
                    if counted == args.n:
                        clean.append(usec)
                median = f"median {statistics.median(clean):.2f}" if clean else "no clean round"
                print(f"  {label:<32} {mode:<16} {median}   rounds: {'  '.join(figures)}")
    finally:
        bench.clean()


if __name__ == "__main__":
    main()
