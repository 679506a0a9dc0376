"""Shared helpers for command modules: flags that default to ``PQUEUE_*`` environment variables."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import Any

from pqueue.errors import ConfigError

ENV_PREFIX = "PQUEUE_"


class UsageError(ConfigError):
    """Flags that cannot go together or a value outside its rule: the CLI prints the one
    line and exits 2, as argparse does for a malformed command line."""


def env_name(flag: str) -> str:
    """``--shutdown-timeout`` -> ``PQUEUE_SHUTDOWN_TIMEOUT``."""
    return ENV_PREFIX + flag.lstrip("-").replace("-", "_").upper()


def from_env(flag: str, convert: Callable[[str], Any], default: Any) -> Any:
    """The value of the flag's environment variable (converted), or ``default``.

    A string ``default`` is converted too, as argparse does, so help can show ``auto``
    for a flag whose value is then ``None``.
    """
    name = env_name(flag)
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return convert(default) if isinstance(default, str) else default
    try:
        return convert(raw)
    except ValueError as exc:
        raise ConfigError(f"{name}={raw!r}: {exc}") from exc


def boolean(text: str) -> bool:
    value = text.strip().lower()
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"0", "false", "no", "off"}:
        return False
    raise ValueError("expected 1/0, true/false, yes/no or on/off")


def add_flag(
    parser: argparse.ArgumentParser,
    flag: str,
    *,
    type: Callable[[str], Any] = str,
    default: Any = None,
    help: str,
    **kwargs: Any,
) -> None:
    """Add ``flag`` whose default comes from ``PQUEUE_<FLAG>`` when set."""
    env = env_name(flag)
    parser.add_argument(
        flag,
        type=type,
        default=_Deferred(flag, type, default),
        help=f"{help} [env {env}; default: {default}]",
        **kwargs,
    )


class _Deferred:
    """A default read from the environment when the command runs, not when it is parsed."""

    def __init__(self, flag: str, convert: Callable[[str], Any], default: Any) -> None:
        self.flag, self.convert, self.default = flag, convert, default

    def __repr__(self) -> str:
        return repr(self.default)


def given(args: argparse.Namespace, key: str) -> bool:
    """Whether the flag behind ``args.<key>`` was set, on the command line or in its
    environment variable (call before :func:`resolve`)."""
    value = getattr(args, key)
    if not isinstance(value, _Deferred):
        return True
    return bool(os.environ.get(env_name(value.flag)))


def resolve(args: argparse.Namespace) -> argparse.Namespace:
    """Replace every environment-backed default that the command line did not set."""
    for key, value in vars(args).items():
        if isinstance(value, _Deferred):
            setattr(args, key, from_env(value.flag, value.convert, value.default))
    return args
