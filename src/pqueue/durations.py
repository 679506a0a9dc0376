"""Durations as people type and read them: ``30s``, ``10m``, ``2h``, ``7d`` or plain seconds.

:func:`parse_duration` is the one parser every surface uses (``pqueue dlq purge
--older-than``, ``pqueue enqueue --delay``, ...); :func:`format_duration` is its inverse
for display, so an age printed by ``pqueue stats`` can be typed back in.
"""

from __future__ import annotations

import math
import re

from pqueue.errors import InvalidRequest

UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
"""Suffix -> seconds."""

_DURATION_RE = re.compile(r"^\s*(\d+(?:\.\d+)?|\.\d+)\s*([smhd]?)\s*\Z", re.IGNORECASE)


def parse_duration(text: str) -> float:
    """``"90"`` -> 90.0, ``"30s"`` -> 30.0, ``"10m"`` -> 600.0, ``"2h"``, ``"7d"``; a number
    >= 0 with at most one unit. Raises :class:`~pqueue.errors.InvalidRequest` naming the
    accepted forms."""
    match = _DURATION_RE.match(text) if isinstance(text, str) else None
    seconds = float(match[1]) * UNITS[(match[2] or "s").lower()] if match else math.nan
    if not math.isfinite(seconds):
        raise InvalidRequest(f"invalid duration {text!r}: use seconds or a number with s, m, h or d (2h)")
    return seconds


def format_duration(seconds: float) -> str:
    """Seconds in the largest unit that keeps them readable: ``4.2s``, ``12m``, ``3.5h``, ``2d``."""
    if seconds < 60:
        return f"{seconds:.1f}s"
    unit, size = next((u, n) for u, n in (("d", 86400.0), ("h", 3600.0), ("m", 60.0)) if seconds >= n)
    value = seconds / size
    return f"{value:.0f}{unit}" if value >= 10 or value.is_integer() else f"{value:.1f}{unit}"
