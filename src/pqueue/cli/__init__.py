"""The ``pqueue`` command line: ``pqueue <command> ...`` and ``python -m pqueue ...``.

Each command is a module in this package that defines
``add_parser(subparsers) -> None``; the parser it adds sets ``func(args) -> int`` as a
default. Commands are discovered, so adding one is adding a module.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys
import traceback
from collections.abc import Sequence

from pqueue.cli._options import UsageError
from pqueue.errors import PQueueError


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with every command module's sub-parser."""
    from pqueue import __version__

    parser = argparse.ArgumentParser(prog="pqueue", description="Typed background jobs for Python.")
    parser.add_argument("--version", action="version", version=f"pqueue {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        add_parser = getattr(module, "add_parser", None)
        if add_parser is not None:
            add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    try:
        return int(func(args))
    except UsageError as exc:  # a rule of the flags: argparse's exit code, without its usage dump
        print(f"pqueue: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except PQueueError as exc:
        # An expected failure (an unreachable broker, a missing schema, a bad option): one
        # line naming the cause. The traceback only with --log-level DEBUG (or, for the
        # commands without that flag, PQUEUE_LOG_LEVEL=DEBUG).
        level = getattr(args, "log_level", None) or os.environ.get("PQUEUE_LOG_LEVEL", "")
        if str(level).upper() == "DEBUG":
            traceback.print_exc()
        print(f"pqueue: error: {_one_line(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def _one_line(exc: BaseException) -> str:
    """The error's message on one line (driver messages may carry a LINE/HINT tail)."""
    return " ".join(str(exc).split()) or type(exc).__name__
