"""One SparkSession for every Spark test: local[2], offline, quiet, UTC (docs/spark.md).

The tests are marked ``spark`` and deselected by default (pyproject's addopts); run them
with ``pytest -m spark tests/spark`` (.ci/spark.sh). Without PySpark they skip loudly,
unless ``PQUEUE_TEST_REQUIRE`` names ``spark``: then they fail.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import services

ROOT = Path(__file__).resolve().parents[2]

SPARK_CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.host": "127.0.0.1",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.python.worker.reuse": "true",
}
MASTER = "local[2,4]"
"""local[2] that lets a failed task run again (up to 4 attempts), as a cluster would."""


def _pyspark() -> Any:
    try:
        import pyarrow  # noqa: F401
        import pyspark
    except ImportError as exc:
        if "spark" in services.required():
            pytest.fail(f"PQUEUE_TEST_REQUIRE names spark, but it cannot be imported: {exc}", pytrace=False)
        pytest.skip(f'SKIPPED SPARK TESTS: {exc} (pip install "pqueue[spark]")')
    return pyspark


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    _pyspark()
    from pyspark.sql import SparkSession

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    # Python workers import the test helpers (tests.spark.faulty) by module name.
    paths = [str(ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    builder = SparkSession.builder.master(MASTER).appName("pqueue-tests")
    for key, value in SPARK_CONF.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
