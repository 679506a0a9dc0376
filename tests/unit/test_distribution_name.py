"""pqueue is ``pqueue-jobs`` on the package index (ADR 0141): ``pqueue`` there is another
project, so no install line, message or package metadata may name it again."""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

import pytest

from pqueue.extras import DISTRIBUTION, install_hint

ROOT = Path(__file__).resolve().parents[2]
SCANNED = [ROOT / "README.md", *(ROOT / d for d in ("docs", "src", "deploy", "examples"))]
SUFFIXES = {".md", ".py", ".toml", ".yml", ".yaml", ".txt", ".html", ".sh", ""}
EXEMPT = {ROOT / "docs" / "adr" / "0141-distribution-name.md"}  # it quotes the old lines
OLD_NAME = re.compile(
    r"pip3? install(?:\s+-[-\w]+)*\s+[\"']?pqueue(?![\w.-])"  # pip install pqueue, "pqueue[..]"
    r"|(?<![\w./-])pqueue\["  # an extra named on the old distribution: pqueue[redis]
)


def _files() -> list[Path]:
    found: list[Path] = []
    for place in SCANNED:
        paths = [place] if place.is_file() else sorted(p for p in place.rglob("*") if p.is_file())
        found += [p for p in paths if (p.suffix in SUFFIXES or p.name == "Dockerfile") and p not in EXEMPT]
    return found


@pytest.mark.parametrize(
    "line",
    [
        "pip install pqueue",
        'pip install "pqueue[redis]"',
        "pip install -U 'pqueue[cli]'",
        'RUN pip install --find-links /wheels "pqueue[redis,postgres]"',
        "needs the `pqueue[web]` extra",
    ],
)
def test_the_check_finds_the_old_name(line: str) -> None:
    assert OLD_NAME.search(line)


@pytest.mark.parametrize(
    "line",
    [
        'pip install "pqueue-jobs[redis]"',
        'pip install -e ".[redis]"',
        "pip install pqueue-jobs",
        "pip uninstall pqueue",
        "from pqueue import connect",
    ],
)
def test_the_check_lets_the_new_name_pass(line: str) -> None:
    assert not OLD_NAME.search(line)


def test_no_doc_or_message_installs_the_old_name() -> None:
    files = _files()
    assert ROOT / "deploy" / "Dockerfile" in files and ROOT / "src" / "pqueue" / "extras.py" in files
    hits = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in files
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
        if OLD_NAME.search(line)
    ]
    assert not hits, f"`pqueue` on the index is another project; say {DISTRIBUTION}:\n" + "\n".join(hits)


def test_pyproject_names_the_distribution_and_its_own_extras_by_it() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["name"] == DISTRIBUTION
    assert project["scripts"]["pqueue"] == "pqueue.cli:main"  # the command keeps its name
    own = [
        requirement
        for requirements in project["optional-dependencies"].values()
        for requirement in requirements
        if re.match(r"pqueue\b", requirement)
    ]
    assert own, "web, all and dev name the package's own extras"
    assert all(r.startswith(f"{DISTRIBUTION}[") for r in own), own


def test_the_install_hint_names_the_index_and_the_clone() -> None:
    assert install_hint("redis") == (
        'pip install "pqueue-jobs[redis]" (from a package index) or pip install -e ".[redis]" (in a clone)'
    )


def test_a_missing_croniter_names_the_distribution(monkeypatch: pytest.MonkeyPatch) -> None:
    from pqueue import periodic
    from pqueue.errors import ConfigError

    monkeypatch.setitem(sys.modules, "croniter", None)  # importing it now raises ImportError
    with pytest.raises(ConfigError, match=r'pip install "pqueue-jobs\[cron\]"'):
        periodic._croniter()
