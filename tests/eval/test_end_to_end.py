"""The whole pipeline with the real pieces: `eval` (real ProverRunner, portfolio strategy, LeanService
with the REPL double behind it) then `eval-report` and `eval-export`, checked end to end.

The REPL double is scripted with FAKE_REPL_RULES: `norm_num` closes two of the three problems,
every other candidate gets a Lean error. Nothing here type-checks Lean; the point is the
plumbing from benchmark file to log, report and export."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from prover.eval.metrics import compute_metrics
from prover.eval.run import EvalRun
from prover.eval.runlog import LOG_NAME, AttemptLine, RunLine, SampleLine, finished_pairs, read_log
from prover.memory import ProofMemory
from prover.runner import ProverRunner, build_runner
from prover.types import ProofOutcome, ProofTask
from sorryless.cli import build_app
from sorryless.config import Settings
from tests.eval.helpers import minif2f_portfolio_job

SOLVABLE = ["mathd_algebra_182", "mathd_numbertheory_169"]
HARD = "amc12a_2019_p21"
IDS = [*SOLVABLE, HARD]


def _app() -> typer.Typer:
    """The real `sorryless` command line (every area's commands registered)."""
    return build_app()


@pytest.fixture
def env(settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The CLI builds Settings() from the environment: point it at the test's isolated settings."""
    rules = tmp_path / "rules.json"
    rules.write_text(
        json.dumps(
            [
                # no "messages": the double's default semantics (clean compile + axiom report) = PASS
                {"match": rf"theorem ({'|'.join(SOLVABLE)})\b[\s\S]*:= by\s+norm_num\s*(\n|$)"},
                {
                    "match": ":= by",
                    "messages": [
                        {
                            "severity": "error",
                            "pos": {"line": 1, "column": 0},
                            "endPos": {"line": 1, "column": 5},
                            "data": "linarith failed to find a contradiction",
                        }
                    ],
                },
            ]
        )
    )
    repl_log = tmp_path / "repl.log"
    monkeypatch.chdir(tmp_path)
    for name in ("LLM_BASE_URL", "LEAN_SERVER_URL", "BENCHMARKS_DIR", "PROVER_DEFAULT_STRATEGY", "LEAN_BIN"):
        monkeypatch.delenv(f"SORRYLESS_{name}", raising=False)
    monkeypatch.setenv("SORRYLESS_DATA_DIR", str(settings.data_dir))
    monkeypatch.setenv("SORRYLESS_REDIS_URL", settings.redis_url)
    monkeypatch.setenv("SORRYLESS_REDIS_KEY_PREFIX", settings.redis_key_prefix)
    monkeypatch.setenv("SORRYLESS_LEAN_REPL_CMD", settings.lean_repl_cmd or "")
    monkeypatch.setenv("SORRYLESS_LEAN_MAX_PROCESSES", "2")
    monkeypatch.setenv("FAKE_REPL_RULES", str(rules))
    monkeypatch.setenv("FAKE_REPL_LOG", str(repl_log))
    return repl_log


def _eval_args(benchmarks_dir: Path, out: Path) -> list[str]:
    return [
        "eval", "minif2f", "--split", "valid", "--strategy", "portfolio", "--ids", ",".join(IDS),
        "--n", "2", "--k", "1,2", "--budget", "attempts=19,repairs=0", "--concurrency", "2",
        "--data", str(benchmarks_dir), "--out", str(out),
    ]  # fmt: skip


@pytest.mark.slow
def test_eval_then_report_then_export_end_to_end(
    env: Path, settings: Settings, benchmarks_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    cli = CliRunner()
    result = cli.invoke(_app(), _eval_args(benchmarks_dir, out))
    assert result.exit_code == 0, result.output + repr(result.exception)

    lines = list(read_log(out / LOG_NAME))
    samples = [x for x in lines if isinstance(x, SampleLine)]
    assert sorted((s.problem_id, s.sample) for s in samples) == sorted((p, i) for p in IDS for i in range(2))
    assert {s.problem_id for s in samples if s.solved} == set(SOLVABLE)
    for s in samples:
        assert s.strategy == "portfolio"
        assert s.cost.compile_calls >= 1 and s.cost.attempts >= 1
        if s.solved:
            assert s.certificate is not None and s.certificate.verdict == "PASS"
            assert s.certificate.environment.backend == "repl"
            assert s.proof is not None and "norm_num" in s.proof and "sorry" not in s.proof
    attempts = [x for x in lines if isinstance(x, AttemptLine)]
    assert any(a.attempt.verdict == "LEAN_ERROR" for a in attempts if a.problem_id == HARD)
    # each attempt logged once, as it happened, with the candidate and certificate Lean saw
    keys = [(a.uid, a.attempt.index) for a in attempts]
    assert len(keys) == len(set(keys))
    checked = [a for a in attempts if a.attempt.verdict is not None]
    assert checked and all(a.attempt.candidate and a.attempt.certificate for a in checked)
    assert all(a.attempt.certificate.verdict == a.attempt.verdict for a in checked if a.attempt.certificate)
    assert all(a.attempt.sample == a.attempt.index and a.attempt.strategy == "portfolio" for a in attempts)
    (run_line,) = [x for x in lines if isinstance(x, RunLine)]
    assert run_line.dataset.records == 488 and run_line.config.budget.max_attempts == 19
    assert env.exists() and env.read_text().count("\n") > 0  # the REPL double really answered

    report = cli.invoke(_app(), ["eval-report", str(out), "--json"])
    assert report.exit_code == 0, report.output
    data = json.loads(report.output)
    metrics = data["metrics"]
    assert metrics["problems"] == 3 and metrics["solved"] == 2
    assert metrics["pass_at"]["1"] == pytest.approx(2 / 3) and metrics["pass_at"]["2"] == pytest.approx(2 / 3)
    assert metrics["budget_total"]["samples"] == 6
    assert metrics["budget_total"]["attempts"] == sum(s.cost.attempts for s in samples)
    assert metrics["cost_total"]["compile_calls"] == sum(s.cost.compile_calls for s in samples)
    assert metrics["environment_seen"]["backends"].get("repl", 0) >= 2
    md = (out / "report.md").read_text()
    assert "Lean backend of the verdicts (certificates) | repl" in md
    assert "| pass@1 (unbiased) | 66.7% |" in md
    assert "fake_repl.py" in md  # the stamp says a REPL double produced these verdicts
    html = (out / "report.html").read_text()
    assert html.count("data:image/png;base64,") == 4

    # re-running the same command resumes: nothing left to do, no prove call, same numbers
    log_before = (out / LOG_NAME).read_text()
    again = cli.invoke(_app(), _eval_args(benchmarks_dir, out))
    assert again.exit_code == 0, again.output
    after = list(read_log(out / LOG_NAME))
    assert len([x for x in after if isinstance(x, SampleLine)]) == 6
    assert len([x for x in after if isinstance(x, AttemptLine)]) == len(attempts)
    assert (out / LOG_NAME).read_text().startswith(log_before)
    assert (
        json.loads(cli.invoke(_app(), ["eval-report", str(out), "--json"]).output)["metrics"]["pass_at"]
        == (metrics["pass_at"])
    )

    # export: verified pairs (distinct proofs) and into the retrieval memory
    exported = tmp_path / "export.jsonl"
    done = cli.invoke(_app(), ["eval-export", str(out), "--out", str(exported), "--to-memory"])
    assert done.exit_code == 0, done.output
    records = [json.loads(line) for line in exported.read_text().splitlines()]
    verified = [r for r in records if r["kind"] == "verified"]
    assert {r["problem_id"] for r in verified} == set(SOLVABLE)
    assert all("norm_num" in r["proof"] and r["lean_backend"] == "repl" for r in verified)
    memory = ProofMemory.from_settings(settings)
    assert {r.task_id for r in memory.records} == set(SOLVABLE)
    assert all(r.source == "eval" for r in memory.records)


def test_eval_rejects_k_above_n_before_running(env: Path, benchmarks_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = _eval_args(benchmarks_dir, out)
    args[args.index("1,2")] = "1,8"
    result = CliRunner().invoke(_app(), args)
    assert result.exit_code == 2
    assert "pass@8 needs --n >= 8" in result.output
    assert not out.exists()


def test_eval_rejects_data_together_with_upstream(env: Path, benchmarks_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = CliRunner().invoke(_app(), [*_eval_args(benchmarks_dir, out), "--upstream"])
    assert result.exit_code == 2
    assert "--data and --upstream" in result.output
    assert not out.exists()


def test_eval_refuses_to_resume_with_another_config(env: Path, benchmarks_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = _eval_args(benchmarks_dir, out)
    args[args.index("--ids") + 1] = HARD
    args[args.index("--n") + 1] = "1"
    args[args.index("--k") + 1] = "1"
    del args[args.index("--data") : args.index("--data") + 2]  # the snapshot shipped with the package
    assert CliRunner().invoke(_app(), args).exit_code == 0
    (run_line,) = [x for x in read_log(out / LOG_NAME) if isinstance(x, RunLine)]
    assert run_line.dataset.origin == "packaged"
    assert run_line.dataset.path == str(benchmarks_dir / "minif2f.jsonl")
    args[args.index("--budget") + 1] = "attempts=3"
    result = CliRunner().invoke(_app(), args)
    assert result.exit_code == 2
    assert "another configuration" in result.output and "budget" in result.output


class CountingRunner:
    """Forwards to the real ProverRunner and counts prove calls (test-side proxy)."""

    def __init__(self, inner: ProverRunner) -> None:
        self.inner = inner
        self.calls: list[str] = []

    async def prove(self, task: ProofTask, **kwargs: Any) -> ProofOutcome:
        self.calls.append(task.id)
        return await self.inner.prove(task, **kwargs)


@pytest.mark.slow
async def test_interrupted_real_run_resumes_without_repeating_finished_samples(
    env: Path, settings: Settings, benchmarks_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_REPL_SERVICE_MS", "20")  # slow enough to interrupt mid-run
    out = tmp_path / "run"
    job = minif2f_portfolio_job(settings, benchmarks_dir, out, IDS, n=3, concurrency=1)
    first = CountingRunner(build_runner(settings))
    task = asyncio.create_task(EvalRun(job, first).run())
    try:
        while len(finished_pairs(out / LOG_NAME)) < 4:
            assert not task.done(), task
            await asyncio.sleep(0.02)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    finally:
        await first.inner.aclose()
    finished = finished_pairs(out / LOG_NAME)
    attempts_before = [x for x in read_log(out / LOG_NAME) if isinstance(x, AttemptLine)]
    assert 4 <= len(finished) < 9

    second = CountingRunner(build_runner(settings))
    try:
        await EvalRun(job, second).run()
    finally:
        await second.inner.aclose()
    assert len(second.calls) == 9 - len(finished)  # finished samples were not proved again
    samples = [x for x in read_log(out / LOG_NAME) if isinstance(x, SampleLine)]
    pairs = [(s.problem_id, s.sample) for s in samples]
    assert len(pairs) == len(set(pairs)) == 9
    finished_uids = {s.uid for s in samples if (s.problem_id, s.sample) in finished}
    attempts_after = [x for x in read_log(out / LOG_NAME) if isinstance(x, AttemptLine)]
    assert [a for a in attempts_after if a.uid in finished_uids] == [
        a for a in attempts_before if a.uid in finished_uids
    ]
    metrics = compute_metrics(read_log(out / LOG_NAME), [1, 3])
    assert metrics.solved == 2 and metrics.pass_at[1] == pytest.approx(2 / 3)


def test_eval_refuses_to_resume_with_another_resolved_strategy_or_model(
    env: Path, benchmarks_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "run"
    args = _eval_args(benchmarks_dir, out)
    del args[args.index("--strategy") : args.index("--strategy") + 2]  # the settings' default decides
    args[args.index("--ids") + 1] = HARD
    args[args.index("--n") + 1] = "1"
    args[args.index("--k") + 1] = "1"
    monkeypatch.setenv("SORRYLESS_PROVER_DEFAULT_STRATEGY", "portfolio")
    first = CliRunner().invoke(_app(), args)
    assert first.exit_code == 0, first.output + repr(first.exception)
    config = json.loads((out / "run.json").read_text())["config"]
    assert (config["strategy"], config["resolved_strategy"], config["llm_model"]) == (None, "portfolio", None)

    monkeypatch.setenv("SORRYLESS_PROVER_DEFAULT_STRATEGY", "repair")
    other_strategy = CliRunner().invoke(_app(), args)
    assert other_strategy.exit_code == 2
    assert "resolved_strategy: 'portfolio' -> 'repair'" in other_strategy.output

    monkeypatch.setenv("SORRYLESS_PROVER_DEFAULT_STRATEGY", "portfolio")
    monkeypatch.setenv("SORRYLESS_LLM_BASE_URL", "http://127.0.0.1:9/v1")  # never called: refused first
    monkeypatch.setenv("SORRYLESS_LLM_MODEL", "another-model")
    other_model = CliRunner().invoke(_app(), args)
    assert other_model.exit_code == 2
    assert "llm_model: None -> 'another-model'" in other_model.output
    assert "resolved_strategy" not in other_model.output
    samples = [x for x in read_log(out / LOG_NAME) if isinstance(x, SampleLine)]
    assert len(samples) == 1  # nothing ran under the other settings
