"""eval-report: every number recomputed from the log matches the run; the HTML renders with its plots."""

from __future__ import annotations

import asyncio
import json
import math
import os
from pathlib import Path

import numpy as np
import pytest
import typer
from matplotlib import image as mpimg
from typer.testing import CliRunner

from prover.eval.cli import register
from prover.eval.errors import InsufficientSamples
from prover.eval.report import (
    ComparisonRow,
    EvalReport,
    build_report,
    render_html,
    render_markdown,
    write_report,
)
from prover.eval.run import EvalRun
from prover.eval.runlog import LOG_NAME, finished_pairs
from tests.eval.chromium import image_widths, screenshot
from tests.eval.helpers import BACKEND, Script, ScriptedProver, make_job, make_problem

# (problem, tags) -> solving attempt index of each of the 4 samples (None = unsolved)
PLAN: dict[str, tuple[list[str], list[int | None]]] = {
    "p0": (["algebra"], [None, 1, None, 0]),
    "p1": (["algebra"], [None, None, None, None]),
    "p2": (["nt"], [0, 0, 2, 0]),
    "p3": (["nt", "imo"], [None, None, 2, None]),
    "p4": (["imo"], [1, None, 0, 0]),
}
N, ATTEMPTS, TOKENS = 4, 3, 100


def _expected_passk(c: int, k: int) -> float:
    return 1 - math.comb(N - c, k) / math.comb(N, k)


def _app() -> typer.Typer:
    app = typer.Typer()
    register(app)
    return app


@pytest.fixture
async def run_dir(tmp_path: Path) -> Path:
    out = tmp_path / "run"
    problems = [make_problem(pid, tags) for pid, (tags, _) in PLAN.items()]
    script = Script(
        solve_at={(pid, s): at for pid, (_, plan) in PLAN.items() for s, at in enumerate(plan)},
        tool_calls=2,
        tokens_per_attempt=TOKENS,
    )
    await EvalRun(
        make_job(out, problems, n=N, ks=[1, 2, 4], concurrency=1), ScriptedProver(script, ATTEMPTS)
    ).run()
    return out


def test_report_recomputes_every_number_from_the_log(run_dir: Path) -> None:
    report = build_report(run_dir)
    m = report.metrics
    counts = {pid: sum(at is not None for at in plan) for pid, (_, plan) in PLAN.items()}
    assert {p.problem_id: (p.n, p.c) for p in m.per_problem} == {pid: (N, c) for pid, c in counts.items()}
    for k in (1, 2, 4):
        expected = sum(_expected_passk(c, k) for c in counts.values()) / len(PLAN)
        assert m.pass_at[k] == pytest.approx(expected)
    assert m.problems == 5 and m.solved == 4
    attempts = {pid: [ATTEMPTS if at is None else at + 1 for at in plan] for pid, (_, plan) in PLAN.items()}
    total_attempts = sum(sum(a) for a in attempts.values())
    assert m.budget_total.samples == 20
    # samples × tool calls, counted from above: per sample attempts + (tool calls - 1)
    assert m.budget_total.samples_x_tool_calls == total_attempts + 20 * (2 - 1)
    assert m.budget_total.attempts == total_attempts
    assert m.cost_total.tokens == total_attempts * TOKENS
    assert m.cost_total.compile_calls == total_attempts
    assert m.cost_per_solved.tokens == pytest.approx(total_attempts * TOKENS / 4)
    assert m.cost_per_problem.compile_calls == pytest.approx(total_attempts / 5)
    # attempts spent up to the first PASS, samples in order
    assert {p.problem_id: p.attempts_to_first_solve for p in m.per_problem} == {
        "p0": 3 + 2,
        "p1": None,
        "p2": 1,
        "p3": 3 + 3 + 3,
        "p4": 2,
    }
    assert m.cumulative_solved_by_attempts == [(1, 1), (2, 2), (5, 3), (9, 4)]
    cats = {c.tag: (c.problems, c.solved) for c in m.categories}
    assert cats == {"algebra": (2, 1), "nt": (2, 2), "imo": (2, 2)}
    assert {s.problem_id for s in m.solved_set} == {"p0", "p2", "p3", "p4"}
    assert all(s.verdict == "PASS" and s.backend == BACKEND for s in m.solved_set)
    assert m.environment_seen.backends.get(BACKEND, 0) > 0


def test_n_below_k_is_rejected_by_the_report(run_dir: Path) -> None:
    with pytest.raises(InsufficientSamples, match="pass@8"):
        build_report(run_dir, [1, 8])
    result = CliRunner().invoke(_app(), ["eval-report", str(run_dir), "--k", "8"])
    assert result.exit_code == 2
    assert "pass@8 needs at least 8 samples" in result.output


def test_cli_json_matches_a_second_computation_and_the_files(run_dir: Path) -> None:
    result = CliRunner().invoke(_app(), ["eval-report", str(run_dir), "--json"])
    assert result.exit_code == 0, result.output
    printed = json.loads(result.output)
    again = build_report(run_dir).metrics.model_dump(mode="json")
    assert printed["metrics"] == again
    assert json.loads((run_dir / "report.json").read_text())["metrics"] == again
    md = (run_dir / "report.md").read_text()
    assert "| pass@4 (unbiased) | 80.0% |" in md
    assert f"Lean backend of the verdicts (certificates) | {BACKEND}" in md
    assert "LongCat-Flash-Prover" in md and "samples_x_tool_calls" in md
    for name in ("passk", "cumulative", "cost", "categories"):
        assert (run_dir / "plots" / f"{name}.png").read_bytes().startswith(b"\x89PNG")


@pytest.mark.slow
def test_html_report_renders_with_its_plots_in_chromium(run_dir: Path, tmp_path: Path) -> None:
    write_report(run_dir)
    html_file = run_dir / "report.html"
    html = html_file.read_text()
    assert html.count("data:image/png;base64,") == 4 and "src='http" not in html  # self-contained
    widths = image_widths(html_file, tmp_path)
    assert len(widths) == 4 and all(w > 100 for w in widths), widths
    shot = Path(os.environ.get("SORRYLESS_EVAL_SCREENSHOT", str(tmp_path / "report.png")))
    screenshot(html_file, shot, tmp_path)
    pixels = np.asarray(mpimg.imread(shot))[..., :3]
    assert pixels.shape[0] >= 1000 and pixels.shape[1] >= 1000
    assert (pixels.std(axis=(0, 1)) > 0.05).all()  # not blank
    assert (pixels < 0.9).any(axis=2).mean() > 0.02  # a real share of non-white pixels (plots, text)


def _row(report: EvalReport, system: str, setting: str, k: int) -> ComparisonRow:
    (row,) = [
        r
        for r in report.comparison
        if r.published.system == system and r.published.setting == setting and r.published.k == k
    ]
    return row


async def _budget_run(out: Path, tool_calls: int) -> Path:
    """5 samples of up to 8 attempts for 4 problems; the first solve after 3, 32, never and 33 attempts."""
    plan: dict[str, list[int | None]] = {
        "q0": [2, None, None, None, None],
        "q1": [None, None, None, 7, None],
        "q2": [None] * 5,
        "q3": [None, None, None, None, 0],
    }
    script = Script(
        solve_at={(pid, s): at for pid, ats in plan.items() for s, at in enumerate(ats)},
        tool_calls=tool_calls,
    )
    problems = [make_problem(pid, ["x"]) for pid in plan]
    await EvalRun(make_job(out, problems, n=5, ks=[1], concurrency=1), ScriptedProver(script, 8)).run()
    return out


async def test_published_rows_are_compared_under_their_own_budget_definition(tmp_path: Path) -> None:
    report = build_report(await _budget_run(tmp_path / "plain", tool_calls=0))
    # attempts (LongCat sketch + TIR @32): solved within 32 attempts, repairs included = q0, q1
    sketch = _row(report, "LongCat-Flash-Prover", "sketch + TIR", 32)
    assert sketch.published.budget == "attempts"
    assert sketch.ours == pytest.approx(50.0)
    assert "within 32 attempts" in sketch.ours_definition and sketch.ours_lean == "4.99.0-test"
    # samples × tool calls without tool calls: one unit per attempt, the same count
    tir = _row(report, "LongCat-Flash-Prover", "whole-proof + TIR", 32)
    assert tir.ours == pytest.approx(50.0) and "no tool calls recorded" in tir.ours_definition
    # samples of up to 8 attempts are not the one-generation samples of pass@k rows
    deepseek = _row(report, "DeepSeek-Prover-V2-671B", "CoT", 1)
    assert deepseek.ours is None and deepseek.ours_note.startswith("not comparable")
    assert "up to 8 attempts" in deepseek.ours_note
    assert _row(report, "OProver-32B", "", 32).ours is None  # n = 5 < 32
    # the larger-budget line (attempts @72) is out of reach: q2 spent only 40 attempts
    large = _row(report, "LongCat-Flash-Prover", "+ tree search", 72)
    assert large.ours is None and "fewer than 72" in large.ours_note and "q2" in large.ours_note

    with_tools = build_report(await _budget_run(tmp_path / "tools", tool_calls=2))
    # 2 tool calls per sample cost one more unit each: only q0 (4 units) stays within 32
    assert _row(with_tools, "LongCat-Flash-Prover", "whole-proof + TIR", 32).ours == pytest.approx(25.0)
    assert _row(with_tools, "LongCat-Flash-Prover", "sketch + TIR", 32).ours == pytest.approx(50.0)

    md = render_markdown(report, {})
    assert "| budget definition | Lean | ours | our definition | our Lean |" in md
    assert "| LongCat-Flash-Prover | sketch + TIR | 93.9% | 32 | attempts | 4.15 | 50.0% |" in md


async def test_one_attempt_samples_are_compared_as_pass_at_k(tmp_path: Path) -> None:
    script = Script(solve_at={("r0", 0): 0, ("r0", 1): None, ("r1", 0): None, ("r1", 1): None})
    problems = [make_problem("r0", ["x"]), make_problem("r1", ["x"])]
    await EvalRun(make_job(tmp_path, problems, n=2, ks=[1]), ScriptedProver(script, 1)).run()
    row = _row(build_report(tmp_path), "DeepSeek-Prover-V2-671B", "CoT", 1)
    assert row.ours == pytest.approx(100 * (0.5 + 0.0) / 2)
    assert row.ours_definition == "unbiased pass@1 over one-attempt samples"


async def test_an_incomplete_run_is_reported_as_incomplete(tmp_path: Path) -> None:
    problems = [make_problem(pid, ["x"]) for pid in ("a", "b", "c", "d", "e")]
    job = make_job(tmp_path, problems, n=1, ks=[1], concurrency=1)
    prover = ScriptedProver(Script(solve_at={(p.id, 0): 0 for p in problems}), 1, block_after=2)
    task = asyncio.create_task(EvalRun(job, prover).run())
    while len(prover.calls) < 2 or len(finished_pairs(tmp_path / LOG_NAME)) < 2:
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    report = build_report(tmp_path)
    m = report.metrics
    assert (m.complete_problems, m.planned_problems, m.planned_n, m.complete) == (2, 5, 1, False)
    assert m.problems == 2 and m.pass_at[1] == pytest.approx(1.0)  # over the 2 with samples, flagged
    assert report.comparison and all(r.ours is None for r in report.comparison)
    assert all("run incomplete (2/5 problems complete)" in r.ours_note for r in report.comparison)
    md = render_markdown(report, {})
    assert "INCOMPLETE RUN: 2/5 problems complete." in md
    assert "| problems complete | 2/5, n = 1 each (INCOMPLETE) |" in md
    assert "| pass@1 (unbiased) (INCOMPLETE RUN) | 100.0% |" in md
    html = render_html(report, {})
    assert "id='incomplete'" in html
    result = CliRunner().invoke(_app(), ["eval-report", str(tmp_path)])
    assert result.exit_code == 0 and "2/5 problems complete" in result.output

    await EvalRun(job, ScriptedProver(Script(solve_at={(p.id, 0): 0 for p in problems}), 1)).run()
    done = build_report(tmp_path)
    assert done.metrics.complete and done.metrics.complete_problems == 5
    assert "INCOMPLETE" not in render_markdown(done, {})


async def test_infrastructure_failures_are_left_out_of_n_and_reported(tmp_path: Path) -> None:
    problems = [make_problem("a", ["x"]), make_problem("b", ["x"])]
    script = Script(solve_at={("a", 0): 0, ("a", 1): None, ("b", 0): 0, ("b", 1): 0})
    job = make_job(tmp_path, problems, n=2, ks=[1])
    # b's second sample fails on infrastructure: b has n = 1 (solved), not n = 2 with c = 1
    flaky = ScriptedProver(script, 1, fail=lambda pid, sample: (pid, sample) == ("b", 1))
    await EvalRun(job, flaky).run()
    report = build_report(tmp_path, [1])
    m = report.metrics
    by_id = {p.problem_id: p for p in m.per_problem}
    assert (by_id["b"].n, by_id["b"].c, by_id["b"].infra_errors) == (1, 1, 1)
    assert by_id["b"].pass_at[1] == pytest.approx(1.0)
    assert m.pass_at[1] == pytest.approx((0.5 + 1.0) / 2)
    assert (m.samples, m.infra_errors, m.infra_retried) == (3, 1, 0)
    assert not m.complete and m.complete_problems == 1
    assert "| infrastructure failures not re-run (excluded from n) | 1 |" in render_markdown(report, {})
    with pytest.raises(InsufficientSamples, match="1 sample\\(s\\) failed on infrastructure"):
        build_report(tmp_path, [2])

    await EvalRun(job, ScriptedProver(script, 1)).run()  # resume: b's sample 1 runs again
    m = build_report(tmp_path, [2]).metrics
    assert (m.samples, m.infra_errors, m.infra_retried, m.complete) == (4, 0, 1, True)


@pytest.mark.parametrize(
    ("api", "memory", "schema", "expected"),
    [
        (None, False, 2, "off: the in-process runner had no retrieval memory (independent samples)"),
        (None, True, 2, "on: the in-process runner read and grew the retrieval memory"),
        ("http://gw", False, 2, "off: gateway prove jobs sent with memory=false (independent samples)"),
        ("http://gw", True, 2, "on: gateway prove jobs sent with memory=true"),
        ("http://gw", False, 1, "on: gateway jobs used the worker's retrieval memory (this log predates"),
    ],
)
def test_the_memory_setting_is_stated_truthfully(
    run_dir: Path, api: str | None, memory: bool, schema: int, expected: str
) -> None:
    log_path = run_dir / "attempts.jsonl"
    lines = log_path.read_text().splitlines()
    head = json.loads(lines[0])
    head["config"].update(api=api, memory=memory)
    head["schema_version"] = schema
    log_path.write_text("\n".join([json.dumps(head), *lines[1:]]) + "\n")
    report = build_report(run_dir)
    assert report.memory.startswith(expected)
    assert f"| retrieval memory | {report.memory} |" in render_markdown(report, {})


async def test_memory_hits_contradicting_the_setting_are_flagged(tmp_path: Path) -> None:
    problems = [make_problem("a", ["x"])]
    await EvalRun(make_job(tmp_path, problems, n=1, ks=[1]), ScriptedProver(Script({("a", 0): 0}), 1)).run()
    log_path = tmp_path / "attempts.jsonl"
    lines = [json.loads(x) for x in log_path.read_text().splitlines()]
    for line in lines:
        if line["type"] == "attempt":
            line["attempt"]["memory_hits"] = ["mem-1"]
    log_path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    report = build_report(tmp_path)
    assert report.metrics.memory_hit_attempts == 1
    assert "WARNING: 1 logged attempts show retrieved proofs" in report.memory


def test_samples_naming_several_models_are_flagged(run_dir: Path) -> None:
    assert "WARNING: mixed run" not in render_markdown(build_report(run_dir), {})
    log_path = run_dir / "attempts.jsonl"
    lines = [json.loads(x) for x in log_path.read_text().splitlines()]
    first_sample = next(x for x in lines if x["type"] == "sample")
    first_sample["model"] = "another-model"
    log_path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    assert "| WARNING: mixed run | the samples name several models |" in render_markdown(
        build_report(run_dir), {}
    )
