"""The PYSPARK_PYTHON pitfall is said in one line before Spark fails with
DATA_SOURCE_NOT_FOUND: checked on stand-in sessions (no JVM), with stand-in interpreters."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path
from typing import Any

import pytest

import pqueue.spark
from pqueue.errors import ConfigError
from pqueue.spark import workers


class _Conf:
    def __init__(self, values: dict[str, str]) -> None:
        self.values = values

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.values.get(key, default)


class _Context:
    def __init__(self, python: str, master: str, conf: dict[str, str]) -> None:
        self.pythonExec, self.master, self._conf = python, master, _Conf(conf)

    def getConf(self) -> _Conf:  # noqa: N802 - PySpark's name
        return self._conf


class _Session:
    def __init__(self, python: str = "python3", master: str = "local[*]", **conf: str) -> None:
        self.sparkContext = _Context(python, master, {k.replace("_", "."): v for k, v in conf.items()})
        self.registered: list[Any] = []
        self.dataSource = self


@pytest.fixture
def path_python(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A ``python3`` first on PATH that has no pqueue (it answers the probe with 1)."""
    fake = tmp_path / "python3"
    fake.write_text("#!/bin/sh\nexit 1\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("PYSPARK_DRIVER_PYTHON", raising=False)
    monkeypatch.setattr(workers, "_known", {})
    return fake


def test_python3_from_path_without_pqueue_is_one_line_naming_pyspark_python(path_python: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        pqueue.spark.check_python(_Session())
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"Spark runs its Python workers with python3 from PATH ({path_python})")
    assert "DATA_SOURCE_NOT_FOUND" in message and f"PYSPARK_PYTHON={sys.executable}" in message


def test_register_says_so_before_registering(path_python: Path) -> None:
    session = _Session()
    with pytest.raises(ConfigError, match="PYSPARK_PYTHON"):
        pqueue.spark.register(session)


def test_this_interpreter_or_one_with_pqueue_passes(path_python: Path, tmp_path: Path) -> None:
    assert workers.python_problem(_Session(python=sys.executable)) is None
    assert workers.python_problem(_Session(spark_pyspark_python=sys.executable)) is None
    good = tmp_path / "good-python"
    good.write_text("#!/bin/sh\nexit 0\n")
    good.chmod(good.stat().st_mode | stat.S_IEXEC)
    assert workers.python_problem(_Session(python=str(good))) is None


def test_the_lookup_interpreter_counts_too(path_python: Path) -> None:
    session = _Session(python=sys.executable, spark_pyspark_driver_python="python3")
    assert "python3 from PATH" in (workers.python_problem(session) or "")


def test_a_missing_interpreter_and_a_cluster(path_python: Path) -> None:
    problem = workers.python_problem(_Session(python="/nowhere/python"))
    assert problem is not None and problem.startswith("Spark runs its Python workers with /nowhere/python,")
    assert workers.python_problem(_Session(master="yarn")) is None  # executors live elsewhere
