""" "Did you mean ...?" hints for names a person typed: job types, DSN options.

One helper, so every refusal of an unknown name suggests the same way.
"""

from __future__ import annotations

from collections.abc import Iterable


def did_you_mean(word: object, known: Iterable[str]) -> str:
    """``"did you mean 'x'?"`` for the name in ``known`` closest to ``word``, or ``""``.

    A name counts as close at difflib's usual 0.6 similarity: one or two wrong, missing
    or extra characters in a name of ordinary length.
    """
    if not isinstance(word, str):
        return ""
    import difflib  # only on the error path: keeps ``import pqueue`` light

    matches = difflib.get_close_matches(word, list(known), n=1)
    return f"did you mean {matches[0]!r}?" if matches else ""
