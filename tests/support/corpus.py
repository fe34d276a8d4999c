"""Where the real skill corpus is, and what a test or benchmark does when it is not there.

The corpus (skill folders written by others, as `SOURCE/SKILL-FOLDER`) sits at `../shared/corpus`
beside a checkout on the project's own machines, or wherever `SKILLHIVE_CORPUS_DIR` points. A
clean clone has none: tests that need it skip, naming the folder they looked in, and
`SKILLHIVE_REQUIRE_CORPUS=1` (set by `.ci/run`) turns that skip into a failure. Every reader rule
the corpus exercises is also exercised by the repository's own skills in `FIXTURE_SKILLS`, which
benchmarks use instead when the corpus is absent.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
FIXTURE_SKILLS = REPO / "tests" / "fixtures" / "skills"
DIR_VARIABLE = "SKILLHIVE_CORPUS_DIR"
REQUIRE_VARIABLE = "SKILLHIVE_REQUIRE_CORPUS"
MISSING_ID = "corpus-missing"


def location() -> Path:
    """Where the corpus is looked for: `SKILLHIVE_CORPUS_DIR`, else `../shared/corpus`."""
    configured = os.environ.get(DIR_VARIABLE, "").strip()
    return (
        Path(configured).expanduser().resolve() if configured else REPO.parent / "shared" / "corpus"
    )


def is_present() -> bool:
    return location().is_dir()


def missing_reason() -> str:
    return (
        f"no skill corpus at {location()} (set {DIR_VARIABLE} to its folder; "
        f"{REQUIRE_VARIABLE}=1 makes this a failure)"
    )


def root() -> Path:
    """The corpus folder, for a test that needs it: skips when it is absent, or fails when
    `SKILLHIVE_REQUIRE_CORPUS=1`. The one place that decides."""
    if is_present():
        return location()
    if os.environ.get(REQUIRE_VARIABLE, "").strip() not in ("", "0"):
        pytest.fail(missing_reason(), pytrace=False)
    pytest.skip(missing_reason())


def path(key: str) -> Path:
    """One corpus skill folder by its key `SOURCE/SKILL-FOLDER` (skips or fails like `root`)."""
    folder = root() / key
    assert folder.is_dir(), f"the corpus at {root()} has no {key}"
    return folder


def keys(*sources: str) -> list[Any]:
    """Parameters for a test over corpus skills: their keys (of `sources`, default all), or, when
    the corpus is absent, one placeholder whose test skips (or fails) in `path`/`root`.
    Never an empty list: an empty parameter set fails at collection."""
    if not is_present():
        return [pytest.param(MISSING_ID, id=MISSING_ID)]
    found = sorted(f"{p.parent.name}/{p.name}" for p in location().glob("*/*") if p.is_dir())
    return [k for k in found if not sources or k.split("/")[0] in sources]


def bench_folder(source: str) -> tuple[Path, bool]:
    """For a benchmark: the corpus's `source` folder (e.g. `anthropics-skills`) when the corpus is
    here, else the repository's fixture skills; and whether it is that fallback."""
    if is_present():
        return location() / source, False
    return FIXTURE_SKILLS, True


def describe(folder: Path, count: int, *, fallback: bool) -> str:
    """The line a benchmark prints about the skills it used."""
    if fallback:
        shown = folder.relative_to(REPO) if folder.is_relative_to(REPO) else folder
        return f"corpus: {shown} (fallback, {count} skills)"
    return f"corpus: {folder} ({count} skills)"
