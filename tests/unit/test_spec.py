"""Enqueue validation and the spec it produces."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from pqueue.errors import InvalidName, InvalidOption, PayloadTooLarge
from pqueue.ids import is_job_id
from pqueue.spec import build_spec, derive_unique_key, encode_payload, recheck_spec


def test_defaults() -> None:
    spec = build_spec("email:welcome", {"to": "a"})
    assert is_job_id(spec.id)
    assert (spec.type, spec.queue, spec.payload_json) == ("email:welcome", "default", '{"to":"a"}')
    assert (spec.max_retries, spec.max_recoveries, spec.delay, spec.run_at) == (3, 5, None, None)
    assert dict(spec.meta) == {}


def test_timedelta_and_datetime_options() -> None:
    when = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert build_spec("t", delay=timedelta(minutes=2)).delay == 120.0
    assert build_spec("t", run_at=when).run_at == when.timestamp()
    assert build_spec("t", timeout=timedelta(seconds=1.5)).timeout == 1.5


def test_unicode_payload_is_kept_as_text_and_sized_in_bytes() -> None:
    assert encode_payload("☃") == '"☃"'
    with pytest.raises(PayloadTooLarge, match="limit is 10 bytes"):
        encode_payload("☃☃☃☃", max_bytes=10)  # 4 chars, 14 bytes with quotes


def test_circular_payload_is_refused() -> None:
    loop: list[object] = []
    loop.append(loop)
    with pytest.raises(ValueError, match="not a JSON value"):
        build_spec("t", loop)


def test_unique_for_alone_derives_a_key_from_type_queue_and_payload() -> None:
    spec = build_spec("t", {"a": 1}, unique_for=60)
    assert spec.unique_key == derive_unique_key("t", "default", '{"a":1}') and spec.unique_for == 60
    assert build_spec("t", {"a": 1}, unique_for=60).unique_key == spec.unique_key
    assert build_spec("t", {"a": 2}, unique_for=60).unique_key != spec.unique_key


def test_explicit_job_id_is_kept() -> None:
    spec = build_spec("t")
    assert build_spec("t", job_id=spec.id).id == spec.id


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [({"delay": 1, "run_at": datetime.now(UTC)}, InvalidOption), ({"timeout": 0}, InvalidOption),
     ({"idempotency_key": "has space"}, InvalidName), ({"unique_key": "", "unique_for": 5}, InvalidName),
     ({"meta": {f"k{i}": "v" for i in range(33)}}, InvalidOption), ({"meta": {"bad key": "v"}}, InvalidName),
     ({"max_retries": True}, InvalidOption), ({"delay": "5"}, InvalidOption),
     ({"max_retries": 2**31}, InvalidOption), ({"max_recoveries": 10_001}, InvalidOption),
     ({"priority": 101}, InvalidOption), ({"priority": -101}, InvalidOption),
     ({"priority": 2.0}, InvalidOption), ({"priority": False}, InvalidOption),
     ({"priority": None}, InvalidOption)],
)  # fmt: skip
def test_bad_options(kwargs: dict[str, object], error: type[Exception]) -> None:
    with pytest.raises(error):
        build_spec("t", **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "kwargs",
    [{"queue": "default\n"}, {"idempotency_key": "key\n"}, {"unique_key": "key\n", "unique_for": 5},
     {"meta": {"trace\n": "v"}}, {"job_id": build_spec("t").id + "\n"}],
)  # fmt: skip
def test_a_trailing_newline_is_not_a_valid_name(kwargs: dict[str, object]) -> None:
    with pytest.raises((InvalidName, InvalidOption)):
        build_spec("t", **kwargs)  # type: ignore[arg-type]
    with pytest.raises(InvalidName):
        build_spec("email:welcome\n")
    assert not is_job_id(build_spec("t").id + "\n")


def test_unique_until_is_ttl_or_done_and_done_needs_a_ttl() -> None:
    assert build_spec("t", unique_for=60).unique_until == "ttl"
    assert build_spec("t", unique_for=60, unique_until="done").unique_until == "done"
    with pytest.raises(InvalidOption, match="'ttl' or 'done'"):
        build_spec("t", unique_for=60, unique_until="forever")
    with pytest.raises(InvalidOption, match="needs unique_for"):
        build_spec("t", unique_until="done")


def test_build_specs_makes_what_build_spec_makes_for_each_payload() -> None:
    """``build_specs`` fills ``JobSpec`` positionally for speed: every shared option must
    land in its own field, as ``build_spec`` (keywords) puts it."""
    from pqueue.spec import build_spec, build_specs

    ids = ["01a21b3b-d861-70e9-9387-eb78f331705a", "01a21b3b-d861-70e9-9387-eb78f331705b"]
    shared = dict(
        queue="q", delay=5.0, max_retries=7, max_recoveries=2, priority=-9, timeout=3.0,
        unique_for=60.0, unique_until="done", meta={"k": "v"}, unset=frozenset({"timeout"}),
    )  # fmt: skip
    many = build_specs("t", [{"a": 1}, {"a": 2}], job_ids=ids, **shared)  # type: ignore[arg-type]
    one = [build_spec("t", {"a": n}, job_id=i, **shared) for n, i in zip((1, 2), ids, strict=True)]  # type: ignore[arg-type]
    assert many == one


def test_unset_names_run_time_options_only() -> None:
    """``unset`` records the options the worker takes from the handler; anything else is a
    typed, one-line refusal (a middleware that rewrites specs is rechecked the same way)."""
    assert build_spec("t").unset == frozenset()
    assert build_spec("t", unset=["timeout", "max_retries"]).unset == {"max_retries", "timeout"}
    for bad, words in [(["queue"], "only these options"), ("max_retries", "not one string"), ([[1]], "")]:
        with pytest.raises(InvalidOption, match=words) as info:
            build_spec("t", unset=bad)  # type: ignore[arg-type]
        assert "\n" not in str(info.value)
    spec = build_spec("t", unset={"max_retries"})
    assert recheck_spec(spec).unset == {"max_retries"}
