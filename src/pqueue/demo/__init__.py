"""``pqueue demo``: a worker pool over a realistic mix of jobs, with a live view.

:mod:`.tasks` holds the job types, :mod:`.scenario` enqueues the mix, runs the
workers and checks every job's final state, :mod:`.display` draws the progress bar
and the final table.
"""

from pqueue.demo.scenario import DemoResult, new_run_id, run_demo

__all__ = ["DemoResult", "new_run_id", "run_demo"]
