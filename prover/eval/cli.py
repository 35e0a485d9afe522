"""`sorryless eval`, `eval-report` and `eval-export`.

``sorryless eval minif2f --split valid --strategy portfolio --n 8 --k 1,8`` runs 8 independent
prove calls per problem (each with the per-sample ``--budget``), in-process or through the
gateway (``--api URL``), logging every attempt to ``<out>/attempts.jsonl``. Running the same
command again with the same ``--out`` resumes: finished (problem, sample) pairs are skipped.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from prover.eval.run import EvalJob, ProgressHook, RunProgress
    from prover.eval.runlog import RunConfig
    from prover.runner import ProverRunner
    from sorryless.config import Settings


def _fail(message: str) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(2)


def _split_ids(ids: list[str] | None) -> list[str] | None:
    if not ids:
        return None
    return [part.strip() for item in ids for part in item.split(",") if part.strip()]


def _default_out(benchmark: str, split: str | None, strategy: str | None, n: int) -> Path:
    return Path("runs") / f"{benchmark}-{split or 'all'}-{strategy or 'default'}-n{n}"


async def _run_local(
    settings: Settings, job: EvalJob, use_memory: bool, progress_hook: ProgressHook
) -> RunProgress:
    from lean_server.checker import Priority
    from prover.eval.run import EvalRun
    from prover.runner import build_runner

    runner = build_runner(settings)
    runner.priority = Priority.BATCH
    if not use_memory:
        runner.memory = None  # independent samples: no retrieval, no writes to the shared memory
    job.config = resolved_config(job.config, runner)
    try:
        return await EvalRun(job, runner, on_progress=progress_hook).run()
    finally:
        await runner.aclose()


def resolved_config(config: RunConfig, runner: ProverRunner) -> RunConfig:
    """The config with what the in-process runner will really use: strategy, model, profile."""
    llm = runner.llm
    return config.model_copy(
        update={
            "resolved_strategy": config.strategy or runner.default_strategy(),
            "llm_model": llm.model if llm is not None else None,
            "llm_profile": (config.profile or runner.settings.llm_profile) if llm is not None else None,
        }
    )


async def _run_gateway(
    api: str, api_key: str | None, job: EvalJob, progress_hook: ProgressHook
) -> RunProgress:
    from prover.eval.gateway import GatewayProver
    from prover.eval.run import EvalRun

    # the strategy, model and profile are the workers': only an explicit --strategy is known here
    job.config = job.config.model_copy(update={"resolved_strategy": job.config.strategy})
    prover = GatewayProver(api, api_key=api_key, memory=job.config.memory)
    try:
        return await EvalRun(job, prover, on_progress=progress_hook).run()
    finally:
        await prover.aclose()


def register(app: typer.Typer) -> None:
    @app.command("eval")
    def eval_command(
        benchmark: Annotated[str, typer.Argument(help="minif2f | putnambench | proverbench | proofnet")],
        split: Annotated[str | None, typer.Option(help="valid | test (default: all splits).")] = None,
        ids: Annotated[
            list[str] | None, typer.Option("--ids", help="Problem ids (repeat or comma-separate).")
        ] = None,
        strategy: Annotated[str | None, typer.Option(help="Prover strategy (default from settings).")] = None,
        budget: Annotated[
            str | None,
            typer.Option(
                help="Per-sample budget: N attempts, or attempts=N,repairs=R,tokens=T,compile=C,wall=S "
                "(default: attempts=SORRYLESS_PROVER_DEFAULT_BUDGET)."
            ),
        ] = None,
        n: Annotated[
            int, typer.Option("--n", min=1, help="Independent samples (prove runs) per problem.")
        ] = 1,
        k: Annotated[
            str, typer.Option("--k", help="pass@k values to report, e.g. 1,8,32 (each <= n).")
        ] = "1",
        profile: Annotated[str | None, typer.Option(help="Model profile.")] = None,
        api: Annotated[str | None, typer.Option(help="Gateway URL: prove through `POST /v1/jobs`.")] = None,
        api_key: Annotated[
            str | None, typer.Option(envvar="SORRYLESS_EVAL_API_KEY", help="Gateway API key.")
        ] = None,
        concurrency: Annotated[int, typer.Option(min=1, help="Samples in flight at once.")] = 4,
        out: Annotated[
            Path | None, typer.Option(help="Run directory (default runs/<bench>-<split>-<strategy>-n<N>).")
        ] = None,
        data: Annotated[
            Path | None,
            typer.Option(
                help="Folder with the benchmark JSONL files (<benchmark>.jsonl). Without --data or "
                "--upstream: SORRYLESS_BENCHMARKS_DIR when it has the file, else the snapshot shipped "
                "with sorryless."
            ),
        ] = None,
        upstream: Annotated[
            bool,
            typer.Option(
                "--upstream",
                help="Use the pinned upstream sources instead of the shipped snapshot: the download "
                "cache under SORRYLESS_DATA_DIR, else download and convert them (needs network).",
            ),
        ] = False,
        memory: Annotated[
            bool,
            typer.Option("--memory/--no-memory", help="Let the prover use and grow the retrieval memory."),
        ] = False,
        report: Annotated[
            bool, typer.Option("--report/--no-report", help="Write the report at the end.")
        ] = True,
    ) -> None:
        """Evaluate a strategy on a benchmark: n samples per problem, unbiased pass@k, honest cost.

        Benchmark file: --data DIR; else with --upstream the download cache or a fresh download of the pinned upstream sources; else SORRYLESS_BENCHMARKS_DIR when it holds the file; else the snapshot shipped with sorryless (works offline).
        """
        import asyncio

        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        from prover.eval.budgetspec import parse_budget
        from prover.eval.datasets import load_dataset
        from prover.eval.environment import environment_info
        from prover.eval.errors import EvalError
        from prover.eval.passk import parse_ks
        from prover.eval.report import write_report
        from prover.eval.run import EvalJob
        from prover.eval.runlog import RunConfig
        from prover.eval.schema import check_benchmark
        from sorryless.config import Settings
        from sorryless.logging import configure_logging

        settings = Settings()
        configure_logging(settings)
        try:
            name = check_benchmark(benchmark)
            ks = parse_ks(k)
            if max(ks) > n:
                raise EvalError(f"pass@{max(ks)} needs --n >= {max(ks)} samples per problem (got --n {n})")
            per_sample = parse_budget(budget, default_attempts=settings.prover_default_budget)
            dataset = load_dataset(name, settings, data_dir=data, upstream=upstream)
            problems = dataset.select(split, _split_ids(ids))
        except (EvalError, ValueError) as exc:
            raise _fail(str(exc)) from exc
        if not problems:
            raise _fail(f"no problems in {name} split {split!r}")
        run_dir = out or _default_out(name, split, strategy, n)
        config = RunConfig(
            benchmark=name,
            split=split,
            ids=_split_ids(ids),
            strategy=strategy,
            profile=profile,
            budget=per_sample,
            n=n,
            api=api,
            memory=memory,
            dataset_sha256=dataset.version.sha256,
        )
        job = EvalJob(
            out_dir=run_dir,
            problems=problems,
            config=config,
            dataset=dataset.version,
            environment=environment_info(settings, profile=profile),
            ks=ks,
            concurrency=concurrency,
        )
        console = Console(stderr=True)
        bar = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("solved {task.fields[solved]}/{task.fields[attempted]} problems"),
            TextColumn(
                "tokens {task.fields[tokens]:,} compile {task.fields[compile]:,} errors {task.fields[errors]}"
            ),
            TimeElapsedColumn(),
            console=console,
        )
        task_id = bar.add_task(
            f"{name} n={n}", total=len(problems) * n, solved=0, attempted=0, tokens=0, compile=0, errors=0
        )

        def on_progress(p: RunProgress) -> None:
            bar.update(
                task_id,
                completed=p.skipped + p.done,
                solved=len(p.problems_solved),
                attempted=len(p.problems_attempted),
                tokens=p.tokens,
                compile=p.compile_calls,
                errors=p.errors,
            )

        try:
            with bar:
                if api:
                    result = asyncio.run(_run_gateway(api, api_key, job, on_progress))
                else:
                    result = asyncio.run(_run_local(settings, job, memory, on_progress))
        except EvalError as exc:
            raise _fail(str(exc)) from exc
        console.print(
            f"{run_dir}: {result.done} samples run, {result.skipped} already done, "
            f"{len(result.problems_solved)} problems solved in this session, {result.errors} infrastructure failures"
        )
        if report:
            try:
                built = write_report(run_dir, ks)
            except EvalError as exc:
                raise _fail(str(exc)) from exc
            summary = ", ".join(f"pass@{kk}={100 * v:.1f}%" for kk, v in built.metrics.pass_at.items())
            m = built.metrics
            console.print(
                f"report: {run_dir / 'report.html'} ({m.complete_problems}/{m.planned_problems} problems "
                f"complete, {m.solved}/{m.problems} solved; {summary})"
            )

    @app.command("eval-report")
    def eval_report(
        run_dir: Annotated[Path, typer.Argument(help="Run directory (holds attempts.jsonl).")],
        k: Annotated[str | None, typer.Option("--k", help="pass@k values (default: the run's --k).")] = None,
        json_output: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    ) -> None:
        """Recompute every metric from the attempt log; write report.md, report.html, report.json."""
        from prover.eval.errors import EvalError
        from prover.eval.passk import parse_ks
        from prover.eval.report import incomplete_warning, write_report

        try:
            built = write_report(run_dir, parse_ks(k) if k else None)
        except (EvalError, ValueError) as exc:
            raise _fail(str(exc)) from exc
        if json_output:
            typer.echo(built.model_dump_json(indent=2))
            return
        m = built.metrics
        typer.echo(
            f"{m.benchmark} {m.split or 'all'}: {m.complete_problems}/{m.planned_problems} problems complete, "
            f"{m.solved}/{m.problems} solved, n={m.n_min}"
        )
        warning = incomplete_warning(m)
        if warning:
            typer.echo(f"  {warning}")
        if m.infra_errors:
            typer.echo(f"  {m.infra_errors} samples failed on infrastructure (not counted; resume to re-run)")
        for kk, value in m.pass_at.items():
            typer.echo(f"  pass@{kk} = {100 * value:.1f}%")
        typer.echo(
            f"  budget: {m.budget_total.samples} samples, {m.budget_total.samples_x_tool_calls} samples×tool calls, "
            f"{m.budget_total.attempts} attempts (repairs included)"
        )
        typer.echo(
            f"  cost: {m.cost_total.tokens} tokens, {m.cost_total.compile_calls} compile calls, "
            f"{m.cost_total.sample_seconds:.1f} s"
        )
        typer.echo(f"  verdicts by backend: {m.environment_seen.backends}")
        typer.echo(f"  wrote {run_dir / 'report.md'} and {run_dir / 'report.html'}")

    @app.command("eval-export")
    def eval_export(
        run_dir: Annotated[Path, typer.Argument(help="Run directory (holds attempts.jsonl).")],
        out: Annotated[Path, typer.Option("--out", help="JSONL file to write.")],
        to_memory: Annotated[
            bool, typer.Option("--to-memory", help="Also add the verified pairs to the retrieval memory.")
        ] = False,
    ) -> None:
        """Export verified (statement, proof) pairs and repair trajectories as JSONL."""
        from prover.eval.errors import EvalError
        from prover.eval.export import export_run
        from prover.memory import ProofMemory
        from sorryless.config import Settings

        memory = ProofMemory.from_settings(Settings()) if to_memory else None
        try:
            summary = export_run(run_dir, out, memory=memory)
        except EvalError as exc:
            raise _fail(str(exc)) from exc
        typer.echo(
            f"{summary.path}: {summary.verified} verified pairs, {summary.trajectories} repair trajectories"
            + (f", {summary.added_to_memory} added to memory" if to_memory else "")
        )
