"""Whether Spark's Python workers can import pqueue: the ``PYSPARK_PYTHON`` pitfall, said in one line.

Spark starts its Python workers -- and the one that looks up Python data sources -- with
``PYSPARK_PYTHON`` (or ``spark.pyspark.python``), else with ``python3`` from ``PATH``. A
script run with a virtualenv's interpreter that is not first on ``PATH`` builds a session
whose workers run the system's ``python3``, which has no pqueue: ``format("pqueue")``
then fails with ``DATA_SOURCE_NOT_FOUND`` / ``ClassNotFoundException:
pqueue.DefaultSource``, which names neither cause nor cure. :func:`check_python` finds
that case before Spark does and raises one line naming ``PYSPARK_PYTHON``.

Only local masters are checked: on a cluster the executors' interpreter lives on other
machines, and the driver cannot tell. The interpreter is asked once (a ``find_spec``,
no import) and the answer kept for the process; this interpreter itself needs no asking.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from typing import Any

from pqueue.errors import ConfigError

_PROBE = (
    "import importlib.util as u, sys; "
    "sys.exit(0 if u.find_spec('pyspark') and u.find_spec('pyspark_pqueue') else 1)"
)
_known: dict[str, bool] = {}


def _interpreters(spark: Any) -> list[str]:
    """The interpreters Spark starts: the data-source lookup's, then the tasks' workers'."""
    sc = spark.sparkContext
    conf = sc.getConf()
    workers = conf.get("spark.pyspark.python", None) or sc.pythonExec
    lookup = (
        conf.get("spark.pyspark.driver.python", None)
        or conf.get("spark.pyspark.python", None)
        or os.environ.get("PYSPARK_DRIVER_PYTHON")
        or workers
    )
    return list(dict.fromkeys([str(lookup), str(workers)]))


def _has_pqueue(path: str) -> bool:
    if path == sys.executable:
        return True
    if path not in _known:
        try:
            probe = subprocess.run([path, "-c", _PROBE], capture_output=True, timeout=60, check=False)
            _known[path] = probe.returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            _known[path] = False
    return _known[path]


def python_problem(spark: Any) -> str | None:
    """One line saying why ``spark``'s Python workers cannot load ``format("pqueue")``, or None."""
    if not str(spark.sparkContext.master).startswith("local"):
        return None
    for command in _interpreters(spark):
        path = shutil.which(command)
        if path is not None and _has_pqueue(path):
            continue
        where = f"{command} from PATH" if os.sep not in command else command
        found = f" ({path})" if path is not None and path != command else ""
        return (
            f"Spark runs its Python workers with {where}{found}, which cannot import pqueue, so "
            f'format("pqueue") fails with DATA_SOURCE_NOT_FOUND: set PYSPARK_PYTHON={sys.executable} '
            "before the SparkSession starts (pqueue.spark.spark_session() does)"
        )
    return None


def check_python(spark: Any) -> None:
    """Raise :class:`~pqueue.errors.ConfigError` (one line naming ``PYSPARK_PYTHON``) when
    ``spark``'s Python workers cannot import pqueue; do nothing otherwise."""
    problem = python_problem(spark)
    if problem is not None:
        raise ConfigError(problem)
