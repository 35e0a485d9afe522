"""The repository stands alone: no tracked file points outside the clone, every data file has its
provenance and licence, the benchmark snapshot is shipped as package data, cited docs exist."""

from __future__ import annotations

import fnmatch
import re
import subprocess
import tomllib
from pathlib import Path

import pytest

from prover.eval.datasets import packaged_benchmarks_dir

REPO = Path(__file__).resolve().parents[2]
# Spelled in pieces so that this file does not match itself.
_OUTSIDE = re.compile(
    "|".join(
        [
            re.escape("../" + "shared"),
            re.escape("/work" + "/"),
            "shared" + r"/(docs|benchmarks|fixtures|tools|acceptance)\b",
            "SORRYLESS_" + "SHARED_DIR",
            re.escape("." + "team/"),
        ]
    )
)
_CITED_DOC = re.compile(r"(?<![\w./-])docs/[\w.-]+\.md\b")


def _tracked() -> list[Path]:
    out = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True, text=True
    ).stdout
    return [REPO / name for name in out.split("\0") if name]


def _text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, IsADirectoryError, FileNotFoundError):
        return None


@pytest.fixture(scope="module")
def tracked_text() -> dict[Path, str]:
    return {p: text for p in _tracked() if (text := _text(p)) is not None}


def test_no_tracked_file_refers_outside_the_repository(tracked_text: dict[Path, str]) -> None:
    assert tracked_text, "git ls-files listed nothing"
    assert not [p for p in tracked_text if p.relative_to(REPO).parts[0] == ".team"]
    found = [
        f"{path.relative_to(REPO)}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0)}"
        for path, text in tracked_text.items()
        for m in _OUTSIDE.finditer(text)
    ]
    assert found == []


def test_every_cited_design_note_is_in_the_repository(tracked_text: dict[Path, str]) -> None:
    cited = {m.group(0) for text in tracked_text.values() for m in _CITED_DOC.finditer(text)}
    assert "docs/verdict.md" in cited  # the check looks where the citations are
    assert sorted(c for c in cited if not (REPO / c).is_file()) == []


@pytest.mark.parametrize(
    "folder", [REPO / "tests" / "data", packaged_benchmarks_dir()], ids=["tests", "package"]
)
def test_every_data_file_has_provenance_and_a_licence(folder: Path) -> None:
    sources = (folder / "SOURCES.md").read_text(encoding="utf-8")
    data = sorted(p.name for p in folder.iterdir() if p.is_file() and p.name != "SOURCES.md")
    licences = sorted(p.name for p in (folder / "LICENSES").iterdir())
    assert data and licences
    assert [name for name in data if name not in sources] == []
    assert [name for name in licences if name not in sources] == []
    assert all((folder / "LICENSES" / name).stat().st_size > 500 for name in licences)
    assert sorted(p.name for p in folder.iterdir() if p.is_dir()) == ["LICENSES"]


def test_the_benchmark_snapshot_is_declared_package_data() -> None:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    globs = pyproject["tool"]["setuptools"]["package-data"]["prover.eval"]
    package = REPO / "prover" / "eval"
    shipped = sorted(p for p in packaged_benchmarks_dir().rglob("*") if p.is_file())
    assert [p.name for p in shipped if p.suffix == ".jsonl"] == sorted(
        f"{name}.jsonl" for name in ("minif2f", "proofnet", "proverbench", "putnambench")
    )
    unshipped = [
        p for p in shipped if not any(fnmatch.fnmatch(p.relative_to(package).as_posix(), g) for g in globs)
    ]
    assert unshipped == []
