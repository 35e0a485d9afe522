"""Benchmark loaders: the four packaged files, the statement layout, versions, and the download path."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from pathlib import Path

import httpx
import pytest

from prover.eval import download
from prover.eval.datasets import load_dataset, packaged_benchmarks_dir, without_reference_answers
from prover.eval.errors import DatasetUnavailable, UnknownProblems
from prover.eval.schema import assemble_stub
from sorryless.config import Settings

COUNTS = {"minif2f": 488, "putnambench": 672, "proverbench": 325, "proofnet": 371}


@pytest.mark.parametrize(("name", "count"), sorted(COUNTS.items()))
def test_loaders_read_all_four_packaged_files(settings: Settings, name: str, count: int) -> None:
    """With no --data, no --upstream and no SORRYLESS_BENCHMARKS_DIR: the snapshot in the package."""
    path = packaged_benchmarks_dir() / f"{name}.jsonl"
    data = load_dataset(name, settings)
    assert len(data.problems) == count
    assert data.version.records == count
    assert data.version.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert (data.version.origin, data.version.path) == ("packaged", str(path))
    assert "SOURCES.md" in data.version.source
    assert len({p.id for p in data.problems}) == count
    for problem in data.problems:
        assert problem.benchmark == name
        # lean4_code == header + preamble + formal_statement, in the common layout
        assert problem.lean4_code == assemble_stub(problem.header, problem.preamble, problem.formal_statement)
        assert problem.formal_statement.rstrip().endswith("sorry")


def test_minif2f_and_proofnet_splits(settings: Settings) -> None:
    minif2f = load_dataset("minif2f", settings)
    assert len(minif2f.select("valid")) == 244
    assert len(minif2f.select("test")) == 244
    proofnet = load_dataset("proofnet", settings)
    assert len(proofnet.select("valid")) == 185
    assert len(proofnet.select("test")) == 186


def test_putnam_statements_carry_their_preamble_and_answer_abbrev(settings: Settings) -> None:
    data = load_dataset("putnambench", settings)
    with_answer = [p for p in data.problems if p.requires_answer]
    assert len(with_answer) == 346
    assert sum(1 for p in data.problems if p.preamble) == 369
    for problem in with_answer:
        abbrev = f"abbrev {problem.id}_solution"
        assert abbrev in problem.preamble
        stub = problem.to_task().statement
        assert stub.startswith(problem.header)
        # the answer abbrev sits between the header and the theorem, and the theorem uses it
        assert stub.index(abbrev) < stub.index(f"theorem {problem.id}")
        assert (
            problem.lean4_code == problem.header + problem.preamble + "\n\n" + problem.formal_statement + "\n"
        )
        # the reference answer (a comment in the source) is in the dataset but never in the prover's task
        assert problem.answer_formal
        for answer in problem.answer_formal:
            assert answer["answer"].split()[0] in problem.preamble
            assert f"-- {answer['answer']}" not in stub
        assert stub == without_reference_answers(problem.lean4_code, problem.answer_formal)
        assert stub.count("\n") == problem.lean4_code.count("\n") - len(problem.answer_formal)


def test_only_comments_that_are_reference_answers_are_dropped() -> None:
    code = "abbrev s : ℕ := sorry\n-- 42\n-- a note\n  --   42  \ntheorem t : s = 42 := by sorry\n"
    assert without_reference_answers(code, [{"name": "s", "answer": "42"}]) == (
        "abbrev s : ℕ := sorry\n-- a note\ntheorem t : s = 42 := by sorry\n"
    )
    assert without_reference_answers(code, None) == code


def test_proofnet_def_items_are_flagged(settings: Settings) -> None:
    data = load_dataset("proofnet", settings)
    defs = [p for p in data.problems if p.is_def]
    assert len(defs) == 14
    assert all("def_statement" in p.tags for p in defs)
    assert all(p.formal_statement.removeprefix("noncomputable ").startswith("def ") for p in defs)


def test_problem_to_task(settings: Settings) -> None:
    data = load_dataset("proverbench", settings)
    problem = data.problems[0]
    task = problem.to_task()
    assert task.id == problem.id
    assert task.statement == problem.lean4_code
    assert task.informal == problem.informal_statement
    assert (task.benchmark, task.split) == ("proverbench", "test")


def test_select_keeps_order_and_rejects_unknown_ids(settings: Settings) -> None:
    data = load_dataset("minif2f", settings)
    picked = data.select("valid", ["mathd_algebra_182", "amc12a_2019_p21"])
    assert [p.id for p in picked] == ["mathd_algebra_182", "amc12a_2019_p21"]
    with pytest.raises(UnknownProblems, match="no_such_problem"):
        data.select("valid", ["mathd_algebra_182", "no_such_problem"])


def test_data_then_upstream_then_settings_dir_then_packaged(settings: Settings, tmp_path: Path) -> None:
    proofnet = (packaged_benchmarks_dir() / "proofnet.jsonl").read_text(encoding="utf-8").splitlines()
    other_version = "\n".join(proofnet[:5]) + "\n"  # another file: 5 records, another sha256

    with pytest.raises(DatasetUnavailable, match="does not exist"):
        load_dataset("proofnet", settings, data_dir=tmp_path / "empty")
    with pytest.raises(DatasetUnavailable, match="choose one"):
        load_dataset("proofnet", settings, data_dir=tmp_path, upstream=True)

    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "proofnet.jsonl").write_text(other_version, encoding="utf-8")
    configured = settings.model_copy(update={"benchmarks_dir": folder})
    from_settings = load_dataset("proofnet", configured)
    assert (from_settings.version.origin, from_settings.version.records) == ("settings", 5)
    # a configured folder without this benchmark's file falls through to the packaged snapshot
    assert load_dataset("minif2f", configured).version.origin == "packaged"
    # --data wins over the configured folder
    assert load_dataset("proofnet", configured, data_dir=packaged_benchmarks_dir()).version.origin == "path"

    cache = settings.data_dir / "benchmarks"
    cache.mkdir(parents=True)
    (cache / "proofnet.jsonl").write_text(other_version, encoding="utf-8")
    # the cache is only read for --upstream, and then before SORRYLESS_BENCHMARKS_DIR
    assert load_dataset("proofnet", settings).version.origin == "packaged"
    cached = load_dataset("proofnet", configured, upstream=True)
    assert (cached.version.origin, cached.version.path) == ("cache", str(cache / "proofnet.jsonl"))


def test_unknown_benchmark(settings: Settings) -> None:
    with pytest.raises(UnknownProblems, match="choose one of"):
        load_dataset("nosuchbench", settings)


# ---- download (the canonical sources, served by an in-test transport) ------------------------
_DS_ROW = {
    "name": "mathd_algebra_182",
    "split": "valid",
    "informal_prefix": "/-- Expand $7(3y+2)$. Show that it is 21y+14.-/\n",
    "formal_statement": "theorem mathd_algebra_182 (y : ℂ) : 7 * (3 * y + 2) = 21 * y + 14 := by\n",
    "goal": "",
    "header": download.MINIF2F_HEADER,
}
_PUTNAM_FILE = (
    "import Mathlib\n\nopen Set\n\n"
    "abbrev putnam_2000_a1_solution : Set ℝ := sorry\n-- Ioo 0 1\n"
    "/--\nFind the set.\n-/\n"
    "theorem putnam_2000_a1 (x : ℝ) :\n    x ∈ putnam_2000_a1_solution ↔ 0 < x ∧ x < 1 :=\n  sorry\n"
)


def _tarball() -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, text in (
            ("PutnamBench-x/lean4/src/putnam_2000_a1.lean", _PUTNAM_FILE),
            (
                "PutnamBench-x/informal/putnam.json",
                json.dumps(
                    [
                        {
                            "problem_name": "putnam_2000_a1",
                            "informal_statement": "Find it.",
                            "tags": ["algebra"],
                        }
                    ]
                ),
            ),
        ):
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _upstream(request: httpx.Request) -> httpx.Response:
    url = str(request.url)
    if url.endswith("DeepSeek-Prover-V1.5/2c4ba9119eef74d0d611f494261b2c5bae98c69a/datasets/minif2f.jsonl"):
        return httpx.Response(200, text=json.dumps(_DS_ROW) + "\n")
    if url.endswith("Goedel-Prover-V2/2e9036e118464aa96a8bebaf9f5b9d091aa3585c/dataset/minif2f.jsonl"):
        row = {
            **_DS_ROW,
            "name": "amc12a_2015_p10",
            "split": "test",
            "formal_statement": "theorem amc12a_2015_p10 (x : ℤ) : x = x := by\n",
        }
        return httpx.Response(200, text=json.dumps(row) + "\n")
    if url == download.PUTNAM_TARBALL:
        return httpx.Response(200, content=_tarball())
    return httpx.Response(404)


async def test_download_converts_canonical_sources_into_the_common_schema(tmp_path: Path) -> None:
    async with httpx.AsyncClient(transport=httpx.MockTransport(_upstream)) as client:
        minif2f = await download.download_benchmark("minif2f", tmp_path, client=client)
        putnam = await download.download_benchmark("putnambench", tmp_path, client=client)
    rows = [json.loads(line) for line in minif2f.read_text().splitlines()]
    assert [(r["id"], r["split"], r["tags"]) for r in rows] == [
        ("mathd_algebra_182", "valid", ["mathd_algebra"]),
        ("amc12a_2015_p10", "test", ["amc12a"]),
    ]
    assert rows[0]["formal_statement"].endswith(":= by sorry")
    assert rows[0]["informal_statement"] == "Expand $7(3y+2)$. Show that it is 21y+14."
    assert "DeepSeek-Prover-V1.5" in json.loads(minif2f.with_suffix(".source.json").read_text())["source"]
    (row,) = [json.loads(line) for line in putnam.read_text().splitlines()]
    assert row["header"] == "import Mathlib\n\nopen Set\n\n"
    assert row["preamble"] == "abbrev putnam_2000_a1_solution : Set ℝ := sorry\n-- Ioo 0 1"
    assert row["formal_statement"].endswith("0 < x ∧ x < 1 := by sorry")
    assert "Find the set" not in row["lean4_code"]  # docstring moved to informal_statement
    assert row["informal_statement"] == "Find it."
    assert row["requires_answer"] is True
    assert row["answer_formal"] == [{"name": "putnam_2000_a1_solution", "answer": "Ioo 0 1"}]
    assert row["lean4_code"] == assemble_stub(row["header"], row["preamble"], row["formal_statement"])


async def test_download_offline_says_where_to_put_the_files(tmp_path: Path) -> None:
    def offline(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("name resolution failed", request=request)

    async with httpx.AsyncClient(transport=httpx.MockTransport(offline)) as client:
        with pytest.raises(DatasetUnavailable, match="--data DIR"):
            await download.download_benchmark("proofnet", tmp_path, client=client)
    assert not (tmp_path / "proofnet.jsonl").exists()


def test_upstream_downloads_into_the_cache_once(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    def fake_download(name: str, dest: Path) -> Path:
        calls.append(name)
        dest.mkdir(parents=True, exist_ok=True)
        path = dest / f"{name}.jsonl"
        row = download._deepseek_style(_DS_ROW, "minif2f", "test-source")
        path.write_text(json.dumps(row) + "\n")
        path.with_suffix(".source.json").write_text(json.dumps({"source": "test-source"}))
        return path

    monkeypatch.setattr(download, "download_benchmark_sync", fake_download)
    data = load_dataset("minif2f", settings, upstream=True)
    assert calls == ["minif2f"]
    assert data.version.origin == "download"
    assert data.version.source == "test-source"
    assert load_dataset("minif2f", settings, upstream=True).version.origin == "cache"
    assert load_dataset("minif2f", settings).version.origin == "packaged"
    assert calls == ["minif2f"]


def test_putnam_file_parser_recovers_all_672_packaged_records(benchmarks_dir: Path) -> None:
    """Rebuild each record as an upstream `.lean` file (docstring, `:=\\n  sorry`) and parse it back."""
    records = [json.loads(line) for line in (benchmarks_dir / "putnambench.jsonl").open()]
    assert len(records) == 672
    for record in records:
        formal = record["formal_statement"]
        assert formal.endswith(":= by sorry")
        theorem = formal[: -len("by sorry")] + "\n  sorry\n"
        docstring = f"/--\n{record['informal_statement']}\n-/\n" if record["informal_statement"] else ""
        preamble = record["preamble"] + "\n" if record["preamble"] else ""
        header, parsed_preamble, parsed_theorem = download.split_putnam_file(
            record["header"] + preamble + docstring + theorem
        )
        assert (header, parsed_preamble) == (record["header"], record["preamble"]), record["id"]
        assert download.normalise_statement(parsed_theorem) == formal, record["id"]


def test_deepseek_row_conversion_reproduces_the_packaged_minif2f_records(benchmarks_dir: Path) -> None:
    """DeepSeek-Prover-V1.5 rows (`:= by` + newline, `/-- … -/` prefix) convert to the packaged records."""
    for line in (benchmarks_dir / "minif2f.jsonl").open():
        record = json.loads(line)
        row = {
            "name": record["id"],
            "split": record["split"],
            "informal_prefix": f"/-- {record['informal_statement']}-/\n",
            "formal_statement": record["formal_statement"][: -len("sorry")].rstrip() + "\n",
            "header": record["header"],
        }
        converted = download._deepseek_style(row, "minif2f", "src")
        for key in ("id", "split", "header", "formal_statement", "lean4_code", "tags", "decl_kind"):
            assert converted[key] == record[key], (record["id"], key)
        assert converted["informal_statement"] == record["informal_statement"].strip()
