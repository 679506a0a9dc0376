"""Auto-registration of ``format("pqueue")``.

PySpark (4.0+) imports every top-level module whose name starts with ``pyspark_`` when a
session first looks up a Python data source, and registers its ``DefaultSource`` under
``DefaultSource.name()``. Installing ``pqueue-jobs[spark]`` ships this module, so
``spark.read.format("pqueue")`` and ``df.write.format("pqueue")`` work with no
``spark.dataSource.register`` call.
"""

from pqueue.spark.datasource import PqueueDataSource as DefaultSource

__all__ = ["DefaultSource"]
