"""Contract: JobPriorityContract (see pqueue.testing.contract.job_priority), once per backend."""

from pqueue.testing.contract import JobPriorityContract


class TestJobPriority(JobPriorityContract):
    pass
