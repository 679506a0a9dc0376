"""Every public method of the clients says what its arguments mean, returns and raises."""

from __future__ import annotations

import inspect

import pytest

from pqueue import AsyncClient, Client

METHODS = [
    (cls, name)
    for cls in (AsyncClient, Client)
    for name, member in vars(cls).items()
    if callable(member) and (not name.startswith("_") or name in ("__init__",))
]


@pytest.mark.parametrize(("cls", "name"), METHODS, ids=[f"{c.__name__}.{n}" for c, n in METHODS])
def test_public_method_documents_its_arguments(cls: type, name: str) -> None:
    method = getattr(cls, name)
    doc = inspect.getdoc(cls if name == "__init__" else method)
    assert doc, f"{cls.__name__}.{name} has no docstring"
    params = [p for p in inspect.signature(method).parameters if p != "self"]
    missing = [p for p in params if p not in doc]
    assert not missing, f"{cls.__name__}.{name}'s docstring does not explain {missing}"
    if params and name != "__init__":
        assert "Args:" in doc, f"{cls.__name__}.{name}'s docstring has no Args section"


def test_the_listing_covers_the_admin_calls() -> None:
    names = {f"{c.__name__}.{n}" for c, n in METHODS}
    assert {"AsyncClient.dead_jobs", "AsyncClient.list_jobs", "Client.dead_jobs", "Client.list_jobs"} <= names
