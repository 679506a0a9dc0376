"""Find the user's :class:`~pqueue.Router` from ``module:attribute`` on the command line."""

from __future__ import annotations

import importlib
import os
import sys

from pqueue.errors import ConfigError
from pqueue.router import Router


def load_router(target: str) -> Router:
    """Import ``package.module:router`` (``:router`` may be omitted; dots walk attributes).

    The current directory is put on ``sys.path`` first, as ``python -m`` would, so
    ``pqueue worker app.tasks:router`` works from a project's root.
    """
    module_name, _, attr_path = target.partition(":")
    if not module_name:
        raise ConfigError(f"router {target!r}: expected MODULE:ROUTER, e.g. myapp.tasks:router")
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        obj: object = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"router {target!r}: cannot import {module_name!r} ({exc})") from exc
    for part in (attr_path or "router").split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ConfigError(
                f"router {target!r}: {module_name!r} has no attribute {attr_path or 'router'!r}"
            ) from None
    if not isinstance(obj, Router):
        raise ConfigError(f"router {target!r} is a {type(obj).__name__}, not a pqueue.Router")
    return obj
