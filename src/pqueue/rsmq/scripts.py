"""The RSMQ Lua scripts: ``lua/_lib.lua`` followed by each script's own file, with the
SHA1 computed here. Both clients call them by ``EVALSHA`` and load them on ``NOSCRIPT``."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cache
from importlib.resources import files

NAMES = (
    "create_queue",
    "delete_queue",
    "attributes",
    "set_attributes",
    "send",
    "receive",
    "pop",
    "change_visibility",
    "delete_message",
    "peek",
    "settle",
    "requeue",
)


@dataclass(frozen=True, slots=True)
class Source:
    """A script's full text and its SHA1 (what ``EVALSHA`` names)."""

    name: str
    text: str
    sha: str


def _read(name: str) -> str:
    return (files("pqueue.rsmq") / "lua" / f"{name}.lua").read_text(encoding="utf-8")


@cache
def source(name: str) -> Source:
    """The script ``name`` (one of :data:`NAMES`), read once per process."""
    if name not in NAMES:
        raise KeyError(name)
    text = f"{_read('_lib')}\n{_read(name)}"
    return Source(name, text, hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest())
