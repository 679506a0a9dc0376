"""Queue selection: parsing and the per-claim order."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from pqueue.errors import ConfigError
from pqueue.priority import QueueSelection


def test_parse_mapping_list_and_cli_string() -> None:
    assert QueueSelection.parse({"a": 6, "b": 1}).weights == (("a", 6), ("b", 1))
    assert QueueSelection.parse(["a", "b"]).weights == (("a", 1), ("b", 1))
    assert QueueSelection.parse("critical:6,default:3, low:1").weights == (
        ("critical", 6),
        ("default", 3),
        ("low", 1),
    )
    assert QueueSelection.parse("a,b").names == ("a", "b")


def test_strict_list_keeps_its_order_and_strict_mapping_sorts_by_weight() -> None:
    assert QueueSelection.parse(["x", "y", "z"], strict=True).order() == ["x", "y", "z"]
    assert QueueSelection.parse({"low": 1, "high": 9, "mid": 5}, strict=True).order() == [
        "high",
        "mid",
        "low",
    ]


def test_weighted_first_choice_follows_the_weights() -> None:
    selection = QueueSelection.parse({"a": 6, "b": 3, "c": 1})
    rng = random.Random(11)
    firsts = Counter(selection.order(rng)[0] for _ in range(20_000))
    assert abs(firsts["a"] / 20_000 - 0.6) < 0.02
    assert abs(firsts["b"] / 20_000 - 0.3) < 0.02
    assert abs(firsts["c"] / 20_000 - 0.1) < 0.02


def test_every_order_names_every_queue_once() -> None:
    selection = QueueSelection.parse({"a": 6, "b": 3, "c": 1})
    for _ in range(100):
        assert sorted(selection.order()) == ["a", "b", "c"]


@pytest.mark.parametrize(
    ("queues", "error"),
    [({}, ConfigError), ("", ConfigError), ({"a": 0}, ConfigError), ("a:x", ConfigError),
     (["a", "a"], ConfigError), ({"bad name": 1}, ConfigError), (["default\n"], ConfigError),
     ({"a": True}, ConfigError)],
)  # fmt: skip
def test_bad_selections_are_refused(queues: object, error: type[Exception]) -> None:
    with pytest.raises(error):
        QueueSelection.parse(queues)  # type: ignore[arg-type]
