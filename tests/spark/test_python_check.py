"""``check_python`` raises no false alarm on a session whose workers can import pqueue
(the suite's session sets PYSPARK_PYTHON to this interpreter); the failing case is
tests/unit/test_spark_python.py, without a JVM."""

from __future__ import annotations

from typing import Any

import pytest

import pqueue.spark
from pqueue.spark.workers import python_problem

pytestmark = pytest.mark.spark


def test_a_session_on_this_interpreter_passes(spark: Any) -> None:
    assert python_problem(spark) is None
    pqueue.spark.check_python(spark)
