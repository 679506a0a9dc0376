"""The one rich console every command draws on (issue 30): the terminal's own width, or
:data:`WIDE` columns in a pipe or file, so a redirected table keeps whole headers.

``COLUMNS`` wins when set (as for any Unix tool); a pipe never gets colour or cursor codes.
rich is imported only here, when a table is drawn (the ``cli`` extra; ADR 0081).
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import TYPE_CHECKING, Any, TextIO

from pqueue.errors import ConfigError
from pqueue.extras import install_hint

if TYPE_CHECKING:
    from rich.console import Console

WIDE = 240
"""Columns of a table written to a pipe or file. A table takes only the width it needs, so
this only decides when one folds: job ids and the report's 13 rate columns fit whole."""


def console(*, stderr: bool = False, file: TextIO | None = None) -> Console:
    """A rich console on stdout (stderr with ``stderr``, or ``file``): ``COLUMNS`` columns if
    set, else the terminal's width, else :data:`WIDE`; no colour unless it is a terminal."""
    stream = file if file is not None else (sys.stderr if stderr else sys.stdout)
    terminal = _is_terminal(stream)
    columns = os.environ.get("COLUMNS", "")
    width = int(columns) if columns.isdigit() and int(columns) > 0 else (None if terminal else WIDE)
    made: Console = rich_module("rich.console").Console(
        file=file,
        stderr=stderr,
        width=width,
        force_terminal=terminal,
        color_system="auto" if terminal else None,
    )
    return made


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or file-like stream without a terminal
        return False


def rich_module(name: str) -> Any:
    """Import a rich module, or say how to install it (it is an optional extra)."""
    try:
        return importlib.import_module(name)
    except ImportError:
        raise ConfigError(f"tables need rich: {install_hint('cli')}; or use --json") from None
