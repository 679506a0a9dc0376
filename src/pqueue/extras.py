"""How to install an optional extra, said the same way by every feature that needs one.

pqueue's core has no dependencies; drivers, the CLI's tables, metrics, the web app and
Spark live in extras. A user who reaches one without it gets one line naming the extra
both as a package install and as a clone's editable install. The package index knows
pqueue as ``pqueue-jobs``: the name ``pqueue`` there is an unrelated project (ADR 0141).
"""

from __future__ import annotations

DISTRIBUTION = "pqueue-jobs"
"""The distribution name on the package index; the import name and the command stay ``pqueue``."""


def install_hint(extra: str) -> str:
    """``pip install "pqueue-jobs[EXTRA]"`` from an index, or ``pip install -e ".[EXTRA]"`` in a clone."""
    return (
        f'pip install "{DISTRIBUTION}[{extra}]" (from a package index)'
        f' or pip install -e ".[{extra}]" (in a clone)'
    )
