"""The benchmark's task: nothing, so the figures are the backends' own cost."""

from pqueue.django import task


@task()
def noop(n: int) -> int:
    return n
