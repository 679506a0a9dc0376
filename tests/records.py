"""Reading the record files that worker processes under test append to, while they run:
the reader of :mod:`pqueue.testing.faults.restarts`, whose restart runs read them too."""

from pqueue.testing.faults.restarts import record_lines

__all__ = ["record_lines"]
