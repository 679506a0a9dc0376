"""``pqueue chaos``: a seeded random workload under faults against a broker, then a check
of everything pqueue promises (docs/reliability.md)."""

from __future__ import annotations

import argparse
import asyncio
import secrets
import sys
from pathlib import Path
from typing import Any

from pqueue.cli._admin import command_parser
from pqueue.cli._options import UsageError, resolve
from pqueue.durations import parse_duration
from pqueue.errors import ConfigError


def add_parser(subparsers: Any) -> None:
    parser = command_parser(
        subparsers,
        "chaos",
        help="check a broker under random work and faults: nothing lost, nothing doubled",
        description="""
            Run a seeded random workload (every enqueue option; handlers that succeed, fail,
            time out, are cancelled or complete in a transaction; operators at work; short-lived
            client processes) through real worker processes while faults strike: SIGKILL,
            SIGSTOP past the lease, drains, connection resets, stalls and latency through a
            proxy of its own, server restarts and failovers (--private-broker). Then check the
            history: every acknowledged job reached one final state, none was completed twice,
            transaction effects happened once, unique, idempotency and limit rules held, the
            statuses followed the state machine, stats() agrees, SQLite's file is intact.

            The run works in a namespace of its own (a key prefix, a schema, a file beside
            yours), dropped after a clean run. Exit 0 only without a violation; a failing run
            prints its seed and, per violation, the shortest history that shows it. The same
            seed runs the same jobs and faults again.
        """,
        examples=[
            "pqueue chaos --dsn redis://localhost:6379/0 --duration 2m",
            "pqueue chaos --dsn postgresql://app@db/app --faults kill,stop,reset --seed 42",
            "pqueue chaos --dsn sqlite:///pqueue.db --workers 3",
            "pqueue chaos --dsn redis+cluster:// --private-broker --duration 30s",
        ],
    )
    parser.add_argument("--duration", type=parse_duration, default=60.0, metavar="SECONDS",
                        help="how long the workload and faults last (30s, 2m; default 60s)")  # fmt: skip
    parser.add_argument("--workers", type=int, default=3, metavar="N", help="worker processes (default 3)")
    parser.add_argument(
        "--seed", type=int, default=None, metavar="N", help="the run's seed (default: a new one)"
    )
    parser.add_argument("--faults", default="all", metavar="LIST",
                        help="comma-separated: kill, stop, drain, reset, stall, latency, restart, failover; "
                             "'all' (default: every one that applies to the DSN) or 'none'")  # fmt: skip
    parser.add_argument("--private-broker", action="store_true",
                        help="start a server of the DSN's scheme of its own (restarts and failovers "
                             "need it); only the scheme of --dsn counts")  # fmt: skip
    parser.add_argument("--concurrency", type=int, default=8, metavar="N", help="jobs per worker (default 8)")
    parser.add_argument("--rate", type=float, default=40.0, metavar="N",
                        help="producer operations a second (default 40; batches count once)")  # fmt: skip
    parser.add_argument("--history", type=Path, default=None, metavar="DIR",
                        help="keep the run's history here (default: a temporary folder, kept after "
                             "a failure)")  # fmt: skip
    parser.add_argument(
        "--keep", action="store_true", help="keep the namespace and history after a clean run"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pqueue.brokers import redact

    resolve(args)
    if not args.dsn:
        raise ConfigError("no broker DSN: pass --dsn or set PQUEUE_DSN (with --private-broker, its scheme)")
    scheme = args.dsn.split("://", 1)[0].lower() if "://" in args.dsn else ""
    _check_numbers(args)
    seed = args.seed if args.seed is not None else secrets.randbelow(10**9)
    print(f"chaos: seed={seed} dsn={redact(args.dsn)} workers={args.workers} duration={args.duration:g}s",
          file=sys.stderr, flush=True)  # fmt: skip
    if args.private_broker:
        from pqueue.chaos.private import private_broker

        with private_broker(scheme) as (dsn, server):
            outcome = _run(args, scheme, seed, dsn, server)
    else:
        outcome = _run(args, scheme, seed, args.dsn, None)
    from pqueue.chaos.report import print_outcome

    print_outcome(outcome, as_json=args.json)
    return 0 if outcome.ok else 1


def _run(args: argparse.Namespace, scheme: str, seed: int, dsn: str, server: Any) -> Any:
    from pqueue.chaos.faults import reasons
    from pqueue.chaos.proxy import proxied_dsn
    from pqueue.chaos.run import Settings, run

    why = reasons(scheme, proxied=proxied_dsn(dsn, 1) is not None, private=server is not None,
                  in_process=scheme == "memory")  # fmt: skip
    faults = _faults(args.faults, why)
    print(f"chaos: faults={','.join(faults) or 'none'}", file=sys.stderr, flush=True)
    settings = Settings(
        dsn=args.dsn, duration=args.duration, workers=args.workers, seed=seed, faults=faults,
        private_broker=args.private_broker, concurrency=args.concurrency, rate=args.rate,
        keep=args.keep, history=args.history,
    )  # fmt: skip
    return asyncio.run(run(settings, scheme=scheme, private=server, broker_dsn=dsn))


def _faults(text: str, why: dict[str, str | None]) -> tuple[str, ...]:
    """The fault kinds asked for: every one that applies for ``all``; a named one that does
    not apply, or does not exist, is a usage error saying why."""
    from pqueue.suggest import did_you_mean

    names = [n.strip().lower() for n in text.split(",") if n.strip()]
    if names == ["all"]:
        return tuple(kind for kind, reason in why.items() if reason is None)
    if names in ([], ["none"]):
        return ()
    for name in names:
        if name not in why:
            hint = did_you_mean(name, list(why))
            guess = f" ({hint})" if hint else ""
            raise UsageError(f"--faults: unknown fault {name!r}{guess}; known: {', '.join(why)}")
        if why[name] is not None:
            raise UsageError(f"--faults: {name} does not apply here: {why[name]}")
    return tuple(dict.fromkeys(names))


def _check_numbers(args: argparse.Namespace) -> None:
    if not 1 <= args.workers <= 64:
        raise UsageError("--workers must be between 1 and 64")
    if not 1 <= args.concurrency <= 256:
        raise UsageError("--concurrency must be between 1 and 256")
    if not 5.0 <= args.duration <= 7 * 24 * 3600:
        raise UsageError("--duration must be between 5s and 7d")
    if not 0.1 <= args.rate <= 10_000:
        raise UsageError("--rate must be between 0.1 and 10000")
    if args.seed is not None and args.seed < 0:
        raise UsageError("--seed must be >= 0")
