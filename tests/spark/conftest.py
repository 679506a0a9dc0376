"""One SparkSession for every Spark test: local[2], offline, quiet, UTC (docs/spark.md).

The tests are marked ``spark`` and deselected by default (pyproject's addopts); run them
with ``pytest -m spark tests/spark`` (`make spark`). Without PySpark they skip loudly,
unless ``PQUEUE_TEST_REQUIRE`` names ``spark``: then they fail.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.services import require_spark

ROOT = Path(__file__).resolve().parents[2]

SPARK_CONF = {"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2"}
MASTER = "local[2,4]"
"""local[2] that lets a failed task run again (up to 4 attempts), as a cluster would."""


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """In a run that does not select the spark marker and lacks PySpark (the core CI
    environment), leave this folder alone: its tests would be deselected anyway, and
    importing them would only report the missing packages."""
    expr = str(config.getoption("markexpr", "") or "")
    if "spark" in expr.replace("not spark", ""):
        return None
    return None if importlib.util.find_spec("pyspark") and importlib.util.find_spec("pyarrow") else True


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    require_spark()
    from pqueue.spark.session import spark_session

    os.environ["PYSPARK_PYTHON"] = sys.executable
    # Python workers import the test helpers (tests.spark.faulty) by module name.
    paths = [str(ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    session = spark_session(MASTER, app="pqueue-tests", conf=SPARK_CONF)
    yield session
    session.stop()
