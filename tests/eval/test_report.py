"""eval-report: every number recomputed from the log matches the run; the HTML renders with its plots."""

from __future__ import annotations

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
from prover.eval.report import build_report, write_report
from prover.eval.run import EvalRun
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
    assert m.budget_total.samples_x_tool_calls == 20 * 2
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
