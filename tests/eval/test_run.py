"""The run loop: every sample logged as it ends, bounded concurrency, resume without repeats."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from prover.eval.errors import RunConfigMismatch
from prover.eval.export import export_records
from prover.eval.metrics import compute_metrics
from prover.eval.run import EvalRun
from prover.eval.runlog import LOG_NAME, AttemptLine, RunLine, SampleLine, finished_pairs, read_log
from prover.types import Budget
from tests.eval.helpers import Script, ScriptedProver, make_job, make_problem

PROBLEMS = [make_problem(f"p{i}", ["algebra" if i % 2 else "nt"]) for i in range(5)]
ALWAYS = {"p0", "p3"}  # solved by every sample at the 2nd attempt; the rest never


def _script(n: int) -> Script:
    return Script(solve_at={(p.id, s): (1 if p.id in ALWAYS else None) for p in PROBLEMS for s in range(n)})


def _sample_lines(out: Path) -> list[SampleLine]:
    return [x for x in read_log(out / LOG_NAME) if isinstance(x, SampleLine)]


async def test_every_sample_and_attempt_is_logged(tmp_path: Path) -> None:
    prover = ScriptedProver(_script(3))
    progress = await EvalRun(make_job(tmp_path, PROBLEMS, n=3, ks=[1, 3]), prover).run()
    assert len(prover.calls) == 15 and progress.done == 15 and progress.skipped == 0
    samples = _sample_lines(tmp_path)
    assert sorted((s.problem_id, s.sample) for s in samples) == [
        (p.id, i) for p in PROBLEMS for i in range(3)
    ]
    assert {s.problem_id for s in samples if s.solved} == ALWAYS
    attempts = [x for x in read_log(tmp_path / LOG_NAME) if isinstance(x, AttemptLine)]
    # solved samples stop after 2 attempts, the others use all 3
    assert len(attempts) == 6 * 2 + 9 * 3
    assert {a.uid for a in attempts} == {s.uid for s in samples}
    # every line is complete JSON ending in a newline (append + flush per line)
    raw = (tmp_path / LOG_NAME).read_text()
    assert raw.endswith("\n")
    assert all(json.loads(line)["type"] for line in raw.splitlines())
    manifest = json.loads((tmp_path / "run.json").read_text())
    assert manifest["config"]["n"] == 3 and manifest["dataset"]["sha256"] == "0" * 64


async def test_interrupted_run_resumes_without_repeating_finished_samples(tmp_path: Path) -> None:
    job = make_job(tmp_path, PROBLEMS, n=4, ks=[1, 4], concurrency=2)
    first = ScriptedProver(_script(4), block_after=7)
    task = asyncio.create_task(EvalRun(job, first).run())
    while len(first.calls) < 7:
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.05)  # the blocked calls are in flight, the 7 finished ones are logged
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    done_before = finished_pairs(tmp_path / LOG_NAME)
    assert len(done_before) == 7

    second = ScriptedProver(_script(4))
    run = EvalRun(job, second)
    progress = await run.run()
    assert run.resumed
    assert progress.skipped == 7
    assert len(second.calls) == 20 - 7  # only the unfinished pairs ran again
    pairs = [(s.problem_id, s.sample) for s in _sample_lines(tmp_path)]
    assert len(pairs) == len(set(pairs)) == 20  # nothing finished twice
    assert not set(pairs[:7]) & {(p, s) for p, s in pairs[7:]}
    runs = [x for x in read_log(tmp_path / LOG_NAME) if isinstance(x, RunLine)]
    assert [r.resumed for r in runs] == [False, True]

    third = ScriptedProver(_script(4))
    assert (await EvalRun(job, third).run()).skipped == 20
    assert third.calls == []


async def test_resume_with_another_config_is_refused(tmp_path: Path) -> None:
    await EvalRun(make_job(tmp_path, PROBLEMS[:1], n=1, ks=[1]), ScriptedProver(_script(1))).run()
    other = make_job(tmp_path, PROBLEMS[:1], n=2, ks=[1])
    with pytest.raises(RunConfigMismatch, match="n: 1 -> 2"):
        await EvalRun(other, ScriptedProver(_script(2))).run()
    other_budget = make_job(tmp_path, PROBLEMS[:1], n=1, ks=[1])
    other_budget.config.budget = Budget(max_attempts=99)
    with pytest.raises(RunConfigMismatch, match="budget"):
        await EvalRun(other_budget, ScriptedProver(_script(1))).run()


async def test_infrastructure_failures_are_logged_and_retried_on_resume(tmp_path: Path) -> None:
    job = make_job(tmp_path, PROBLEMS[:2], n=2, ks=[1])
    flaky = ScriptedProver(_script(2), fail=lambda pid, sample: pid == "p1")
    progress = await EvalRun(job, flaky).run()
    assert progress.errors == 2
    failed = [s for s in _sample_lines(tmp_path) if s.infra_error]
    assert {(s.problem_id, s.sample) for s in failed} == {("p1", 0), ("p1", 1)}
    assert "ConnectionError" in (failed[0].error or "")
    healthy = ScriptedProver(_script(2))
    await EvalRun(job, healthy).run()
    assert sorted(healthy.calls) == [("p1", 0), ("p1", 1)]


async def test_a_torn_last_line_is_dropped_before_appending(tmp_path: Path) -> None:
    job = make_job(tmp_path, PROBLEMS[:2], n=1, ks=[1])
    await EvalRun(job, ScriptedProver(_script(1))).run()
    log_path = tmp_path / LOG_NAME
    with log_path.open("a") as fh:
        fh.write('{"type": "sample", "problem_id": "p9", "sam')  # a crash mid-write
    assert len(finished_pairs(log_path)) == 2
    again = ScriptedProver(_script(1))
    await EvalRun(job, again).run()
    assert again.calls == []
    assert all(json.loads(line) for line in log_path.read_text().splitlines())


async def test_concurrency_is_bounded(tmp_path: Path) -> None:
    in_flight = 0
    peak = 0

    class Slow(ScriptedProver):
        async def prove(self, task, **kwargs):
            nonlocal in_flight, peak
            in_flight += 1
            peak = max(peak, in_flight)
            await asyncio.sleep(0.01)
            try:
                return await super().prove(task, **kwargs)
            finally:
                in_flight -= 1

    await EvalRun(make_job(tmp_path, PROBLEMS, n=2, ks=[1], concurrency=3), Slow(_script(2))).run()
    assert peak == 3


def _attempt_lines(out: Path) -> list[AttemptLine]:
    return [x for x in read_log(out / LOG_NAME) if isinstance(x, AttemptLine)]


async def test_attempt_lines_are_written_as_they_happen_and_an_interrupted_sample_is_not_counted_twice(
    tmp_path: Path,
) -> None:
    job = make_job(tmp_path, PROBLEMS[1:2], n=1, ks=[1], concurrency=1)  # p1: never solved, 3 attempts
    paused = ScriptedProver(_script(1), pause_at=2)
    task = asyncio.create_task(EvalRun(job, paused).run())
    for _ in range(500):  # the two reported attempts reach the log while the third waits
        if len(_attempt_lines(tmp_path)) >= 2 or task.done():
            break
        await asyncio.sleep(0.01)
    # two attempts are in the log, complete, while the sample is still running
    live = _attempt_lines(tmp_path)
    assert [a.attempt.index for a in live] == [0, 1] and not _sample_lines(tmp_path)
    for a in live:
        assert a.attempt.candidate is not None and "norm_num -- " in a.attempt.candidate
        assert a.attempt.certificate is not None and a.attempt.certificate.verdict == "LEAN_ERROR"
        assert a.attempt.verdict == "LEAN_ERROR" and a.attempt.round == a.attempt.index
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    await EvalRun(job, ScriptedProver(_script(1))).run()  # the sample runs again, from scratch
    lines = _attempt_lines(tmp_path)
    (sample,) = _sample_lines(tmp_path)
    assert len(lines) == 2 + 3
    assert [a.attempt.index for a in lines if a.uid == sample.uid] == [0, 1, 2]
    metrics = compute_metrics(read_log(tmp_path / LOG_NAME), [1])
    assert metrics.verdicts == {"LEAN_ERROR": 3}  # the interrupted try's two attempts are not counted
    assert metrics.orphan_attempts == 2
    assert metrics.budget_total.attempts == 3
    (trajectory,) = [r for r in export_records(tmp_path) if r["kind"] == "trajectory"]
    assert [step["index"] for step in trajectory["steps"]] == [0, 1, 2]


async def test_concurrent_samples_of_one_problem_keep_their_own_checks(tmp_path: Path) -> None:
    # p0's sample 0 passes at attempt 0, sample 1 never: both report their attempt 0 at once,
    # with different verdicts, and each line must hold its own sample's attempt
    script = Script(solve_at={("p0", 0): 0, ("p0", 1): None})
    await EvalRun(make_job(tmp_path, PROBLEMS[:1], n=2, ks=[1], concurrency=2), ScriptedProver(script)).run()
    samples = {s.uid: s for s in _sample_lines(tmp_path)}
    lines = _attempt_lines(tmp_path)
    assert len(lines) == 1 + 3  # each attempt once: the live line was already complete
    for a in lines:
        assert a.attempt.certificate is not None
        assert a.attempt.certificate.verdict == a.attempt.verdict
        assert (a.attempt.verdict == "PASS") == (samples[a.uid].solved and a.attempt.index == 0)


async def test_attempts_the_events_could_not_complete_are_written_when_the_sample_ends(
    tmp_path: Path,
) -> None:
    # a prover whose checks the eval cannot see: the live lines lack candidate and certificate,
    # the sample's end adds the full records, and readers keep one line per attempt
    prover = ScriptedProver(_script(2), records=False)
    await EvalRun(make_job(tmp_path, PROBLEMS[:2], n=2, ks=[1]), prover).run()
    lines = _attempt_lines(tmp_path)
    expected = 2 * 2 + 2 * 3  # p0 solved at the 2nd attempt, p1 never (3 attempts)
    assert len(lines) == 2 * expected
    assert sum(1 for a in lines if a.attempt.candidate is None) == expected  # the live ones
    metrics = compute_metrics(read_log(tmp_path / LOG_NAME), [1])
    assert sum(metrics.verdicts.values()) == expected and metrics.verdicts["PASS"] == 2
    assert metrics.orphan_attempts == 0
