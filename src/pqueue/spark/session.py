"""A SparkSession for pqueue's own commands (``pqueue report``) and tests: quiet, offline, UTC.

Only what a local run needs: no UI, the driver bound to loopback when the master is local,
UTC time buckets, few shuffle partitions, Python workers on this interpreter. On a
cluster, ``spark-submit`` users build their own session; these settings are a sane
default for ``--spark-master local[*]`` (docs/spark.md).
"""

from __future__ import annotations

import os
import sys
from typing import Any

QUIET_CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.shuffle.partitions": "4",
    "spark.python.worker.reuse": "true",
}
LOCAL_CONF = {"spark.driver.bindAddress": "127.0.0.1", "spark.driver.host": "127.0.0.1"}


def spark_session(
    master: str = "local[*]", *, app: str = "pqueue", conf: dict[str, str] | None = None
) -> Any:
    """Get or create the session; ``conf`` entries override the defaults above."""
    from pyspark.sql import SparkSession

    settings = dict(QUIET_CONF)
    if master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        settings.update(LOCAL_CONF)
    settings.update(conf or {})
    builder = SparkSession.builder.master(master).appName(app)
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session
