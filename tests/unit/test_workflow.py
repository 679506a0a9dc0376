"""Workflow builders (chain, group, chord) and the checks of depends_on, without a broker."""

from __future__ import annotations

import pytest

import pqueue
from pqueue import InvalidName, InvalidOption, Task
from pqueue.broker_flows import plan_flow, topological
from pqueue.ids import new_id
from pqueue.spec import build_spec


def t(name: str) -> Task:
    return Task("t", name)


def shape(tasks: list[Task]) -> list[tuple[str, list[str]]]:
    """(payload, payloads of its parents) per task, for readable assertions."""
    by_id = {task.job_id: task.payload for task in tasks}
    return [(task.payload, [by_id[p] for p in task.depends_on]) for task in tasks]


def test_chain_links_each_step_to_the_one_before() -> None:
    tasks = pqueue.chain(t("a"), t("b"), t("c")).tasks()
    assert shape(tasks) == [("a", []), ("b", ["a"]), ("c", ["b"])]
    assert len({task.job_id for task in tasks}) == 3


def test_groups_in_chains_fan_out_and_in() -> None:
    flow = pqueue.chain(t("a"), pqueue.group([t("b"), pqueue.chain(t("c"), t("d"))]), t("e"))
    assert shape(flow.tasks()) == [("a", []), ("b", ["a"]), ("c", ["a"]), ("d", ["c"]), ("e", ["b", "d"])]


def test_chord_callback_waits_for_every_member() -> None:
    assert shape(pqueue.chord([t("a"), t("b")], t("cb")).tasks()) == [
        ("a", []),
        ("b", []),
        ("cb", ["a", "b"]),
    ]
    assert shape(pqueue.chord(pqueue.group([t("a")]), t("cb")).tasks()) == [("a", []), ("cb", ["a"])]


def test_each_enqueue_gets_fresh_ids_unless_a_task_has_one() -> None:
    chosen = new_id()
    flow = pqueue.chain(Task("t", "a", job_id=chosen), t("b"))
    first, second = flow.tasks(), flow.tasks()
    assert first[0].job_id == second[0].job_id == chosen
    assert first[1].job_id != second[1].job_id


def test_whole_graph_options() -> None:
    parent = new_id()
    tasks = pqueue.group([t("a"), t("b")]).tasks(depends_on=[parent], on_parent_failure="run")
    assert all(task.depends_on == (parent,) and task.on_parent_failure == "run" for task in tasks)
    with pytest.raises(InvalidOption):
        pqueue.chain(t("a")).tasks(on_parent_failure="ignore")
    with pytest.raises(InvalidOption):
        pqueue.chain(t("a")).tasks(depends_on=parent)  # one string, not a list


@pytest.mark.parametrize(
    "build",
    [
        pqueue.chain,
        lambda: pqueue.group([]),
        lambda: pqueue.chain(t("a"), 3),
        lambda: pqueue.chord([], t("a")),
    ],
)
def test_empty_or_foreign_steps_are_refused(build: object) -> None:
    with pytest.raises(InvalidOption):
        build()  # type: ignore[operator]


def test_depends_on_checks() -> None:
    job_id = new_id()
    assert build_spec("t", depends_on=[job_id]).depends_on == (job_id,)
    with pytest.raises(InvalidName):
        build_spec("t", depends_on=["not-an-id"])
    with pytest.raises(InvalidOption):
        build_spec("t", depends_on=[job_id, job_id])
    with pytest.raises(InvalidOption):
        build_spec("t", job_id=job_id, depends_on=[job_id])
    with pytest.raises(InvalidOption):
        build_spec("t", depends_on=[new_id()], unique_for=5)
    with pytest.raises(InvalidOption):
        build_spec("t", depends_on=[new_id()], on_parent_failure="maybe")
    with pytest.raises(InvalidOption):
        build_spec("t", depends_on=job_id)  # type: ignore[arg-type]


def test_plan_flow_finds_outside_parents_and_cycles() -> None:
    outside = new_id()
    a = build_spec("t", 1, depends_on=[outside])
    b = build_spec("t", 2, depends_on=[a.id, outside])
    assert plan_flow([b, a]).external == (outside,)
    assert [s.id for s in topological([b, a])] == [a.id, b.id]
    x, y, z = new_id(), new_id(), new_id()
    cycle = [
        build_spec("t", job_id=x, depends_on=[z]),
        build_spec("t", job_id=y, depends_on=[x]),
        build_spec("t", job_id=z, depends_on=[y]),
    ]
    with pytest.raises(InvalidOption, match="cycle"):
        plan_flow(cycle)
    with pytest.raises(InvalidOption):
        plan_flow([a, a])
