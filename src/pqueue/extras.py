"""How to install an optional extra, said the same way by every feature that needs one.

pqueue's core has no dependencies; drivers, the CLI's tables, metrics, the web app and
Spark live in extras. A user who reaches one without it gets one line naming the extra
both as a package install and as a clone's editable install.
"""

from __future__ import annotations


def install_hint(extra: str) -> str:
    """``pip install "pqueue[EXTRA]"`` from an index, or ``pip install -e ".[EXTRA]"`` in a clone."""
    return f'pip install "pqueue[{extra}]" (from a package index) or pip install -e ".[{extra}]" (in a clone)'
