"""`eval-report`: every metric recomputed from the attempt log, written as Markdown, HTML and JSON.

The HTML is self-contained (plots embedded as base64 PNG); the Markdown links the same plots
saved under ``plots/``. Published numbers are shown with their budget definitions and Lean
versions next to ours, and the environment stamp says which Lean backend produced our verdicts.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, Field

from prover.eval.datasets import DatasetVersion
from prover.eval.errors import EvalError
from prover.eval.metrics import CostSummary, ProblemMetrics, RunMetrics, compute_metrics
from prover.eval.passk import pass_at_k
from prover.eval.plots import all_plots
from prover.eval.published import PublishedResult, published_for
from prover.eval.runlog import (
    LOG_NAME,
    EnvironmentInfo,
    RunConfig,
    RunLine,
    file_sha256_or_none,
    read_log,
    utcnow,
)


class ComparisonRow(BaseModel):
    published: PublishedResult
    ours: float | None = Field(
        default=None,
        description="Our number in the published row's unit, at its k and under its budget definition "
        "(None: not comparable, see ours_note).",
    )
    ours_definition: str = Field(default="", description="How our number was counted.")
    ours_lean: str = Field(default="", description="Lean versions our certificates were checked on.")
    ours_note: str = ""


class EvalReport(BaseModel):
    run_dir: str
    generated_at: datetime
    log_sha256: str | None
    config: RunConfig | None
    dataset: DatasetVersion | None
    environment: EnvironmentInfo | None
    starts: int = Field(description="Run lines in the log: 1 + number of resumes.")
    log_schema: int = Field(default=1, description="Schema version of the last run line.")
    memory: str = Field(default="?", description="The retrieval memory setting, in words.")
    metrics: RunMetrics
    comparison: list[ComparisonRow]


def _incomplete_state(m: RunMetrics) -> str:
    if not m.plan_recorded:
        return "the log does not record the planned problems"
    return f"{m.complete_problems}/{m.planned_problems} problems complete"


def _not_comparable(reason: str) -> tuple[float | None, str, str]:
    return None, "—", f"not comparable: {reason}"


def _within(
    metrics: RunMetrics,
    k: int,
    first: Callable[[ProblemMetrics], int | None],
    spent: Callable[[ProblemMetrics], int],
) -> tuple[int, list[str]]:
    """(problems solved within budget k, problems we cannot judge at k: unsolved with < k spent)."""
    solved = sum(1 for p in metrics.per_problem if (first(p) or k + 1) <= k)
    unknown = [p.problem_id for p in metrics.per_problem if first(p) is None and spent(p) < k]
    return solved, unknown


def _ours(metrics: RunMetrics, row: PublishedResult) -> tuple[float | None, str, str]:
    """(our value, how it was counted, note) under the published row's own budget definition."""
    if not metrics.complete:
        return _not_comparable(f"run incomplete ({_incomplete_state(metrics)})")
    if row.k is None or row.budget == "n/a":
        return _not_comparable("the published budget is not stated")
    if metrics.problems == 0:
        return _not_comparable("no problems")
    k, problems = row.k, metrics.problems
    if row.budget == "samples":
        if metrics.n_min < k:
            return _not_comparable(f"needs n >= {k} samples per problem (run has n = {metrics.n_min})")
        if metrics.max_sample_attempts > 1:
            return _not_comparable(
                f"a published sample is one generation, ours used up to {metrics.max_sample_attempts} "
                "attempts (repairs included); run with --budget attempts=1,repairs=0"
            )
        mean = sum(pass_at_k(p.n, p.c, k) for p in metrics.per_problem) / problems
        definition = f"unbiased pass@{k} over one-attempt samples"
    else:
        unit = "attempts" if row.budget == "attempts" else "samples × tool calls units"
        if row.budget == "attempts":
            solved, unknown = _within(
                metrics, k, lambda p: p.attempts_to_first_solve, lambda p: p.budget.attempts
            )
            definition = f"solved within {k} attempts (repairs included, samples in order)"
        else:
            solved, unknown = _within(
                metrics, k, lambda p: p.units_to_first_solve, lambda p: p.budget.samples_x_tool_calls
            )
            definition = f"solved within {k} samples × tool calls (per sample attempts + tool calls - 1)"
            if metrics.cost_total.tool_calls == 0:
                definition += "; no tool calls recorded"
        if unknown:
            return _not_comparable(
                f"{len(unknown)} unsolved problem(s) spent fewer than {k} {unit} ({', '.join(unknown[:3])}"
                f"{', …' if len(unknown) > 3 else ''}); raise --n or the per-sample budget"
            )
        mean = solved / problems
    caveat = (
        "" if metrics.split in (None, row.split) else f"; ours on {metrics.split}, published on {row.split}"
    )
    if row.unit == "problems":
        counted = "expected problems solved" if row.budget == "samples" else "problems solved"
        return mean * problems, definition, f"{counted} of {problems}{caveat}"
    return 100 * mean, definition, f"over {problems} problems{caveat}"


def _memory_setting(config: RunConfig | None, schema: int, metrics: RunMetrics) -> str:
    """The retrieval memory setting, truthfully: what was asked, how it was applied, what was seen."""
    if config is None:
        return "?"
    if config.api is None:
        text = (
            "on: the in-process runner read and grew the retrieval memory (samples not independent)"
            if config.memory
            else "off: the in-process runner had no retrieval memory (independent samples)"
        )
    elif schema < 2:
        text = "on: gateway jobs used the worker's retrieval memory (this log predates the memory param)"
    else:
        text = (
            "on: gateway prove jobs sent with memory=true (samples not independent)"
            if config.memory
            else "off: gateway prove jobs sent with memory=false (independent samples)"
        )
    hits = metrics.memory_hit_attempts
    if hits and not config.memory:
        text += f"; WARNING: {hits} logged attempts show retrieved proofs"
    elif hits:
        text += f"; {hits} logged attempts show retrieved proofs"
    return text


def build_report(run_dir: Path, ks: list[int] | None = None) -> EvalReport:
    """Recompute the report of a run directory from its attempts.jsonl alone."""
    log_path = run_dir / LOG_NAME
    if not log_path.exists():
        raise EvalError(f"{log_path} does not exist: not a run directory")
    lines = list(read_log(log_path))
    runs = [x for x in lines if isinstance(x, RunLine)]
    chosen_ks = ks if ks is not None else (runs[-1].ks if runs else [1])
    metrics = compute_metrics(lines, chosen_ks)
    if metrics.samples == 0:
        raise EvalError(f"{log_path} has no finished samples yet")
    last = runs[-1] if runs else None
    our_lean = ", ".join(sorted(metrics.environment_seen.lean_versions)) or "?"
    comparison = [
        ComparisonRow(
            published=row, ours=value, ours_definition=definition, ours_lean=our_lean, ours_note=note
        )
        for row in published_for(metrics.benchmark or "")
        for value, definition, note in [_ours(metrics, row)]
    ]
    schema = last.schema_version if last else 1
    return EvalReport(
        run_dir=str(run_dir),
        generated_at=utcnow(),
        log_sha256=file_sha256_or_none(log_path),
        config=last.config if last else None,
        dataset=last.dataset if last else None,
        environment=last.environment if last else None,
        starts=len(runs),
        log_schema=schema,
        memory=_memory_setting(last.config if last else None, schema, metrics),
        metrics=metrics,
        comparison=comparison,
    )


# ---- rendering ----------------------------------------------------------------------------
def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _num(x: float) -> str:
    return f"{x:,.0f}" if float(x).is_integer() or abs(x) >= 100 else f"{x:,.2f}"


def _counts(d: dict[str, int]) -> str:
    return ", ".join(f"{k} ×{v}" for k, v in sorted(d.items(), key=lambda kv: -kv[1])) or "—"


def _cost_cells(c: CostSummary) -> list[str]:
    return [
        _num(c.tokens),
        _num(c.llm_calls),
        _num(c.compile_calls),
        _num(c.attempts),
        f"{c.sample_seconds:.2f}",
    ]


def _completeness(m: RunMetrics) -> str:
    n = f", n = {m.planned_n} each" if m.planned_n else ""
    if not m.plan_recorded:
        return f"{m.complete_problems}/{m.planned_problems}{n} (planned problems not recorded in the log)"
    return f"{m.complete_problems}/{m.planned_problems}{n}" + ("" if m.complete else " (INCOMPLETE)")


def _resolved(cfg: RunConfig | None) -> str:
    if cfg is None:
        return "?"
    if cfg.resolved_strategy:
        return cfg.resolved_strategy
    return "the gateway's default" if cfg.api else "not recorded"


def _model_profile(cfg: RunConfig | None) -> str:
    if cfg is None:
        return "?"
    if cfg.api:
        return (
            f"the gateway workers' / {cfg.profile or 'their default'} (see the models of the samples below)"
        )
    return f"{cfg.llm_model or 'no LLM'} / {cfg.llm_profile or cfg.profile or '—'}"


def incomplete_warning(m: RunMetrics) -> str | None:
    """The banner of an incomplete run (None when complete)."""
    if m.complete:
        return None
    return (
        f"INCOMPLETE RUN: {_incomplete_state(m)}. The numbers cover only the samples "
        "logged so far and the comparison with published numbers is suppressed; resume the run "
        "with the same command."
    )


def _tables(report: EvalReport) -> list[tuple[str, list[str], list[list[str]]]]:
    """(title, header, rows) of every table, shared by Markdown and HTML."""
    m = report.metrics
    env = report.environment
    seen = m.environment_seen
    cfg = report.config
    ds = report.dataset
    summary = [
        ["benchmark / split", f"{m.benchmark} / {m.split or 'all'}"],
        ["problems complete", _completeness(m)],
        ["problems (solved)", f"{m.problems} ({m.solved})"],
        ["samples per problem (n)", f"{m.n_min}" if m.n_min == m.n_max else f"{m.n_min}–{m.n_max}"],
        *[
            [f"pass@{k} (unbiased)" + ("" if m.complete else " (INCOMPLETE RUN)"), _pct(v)]
            for k, v in m.pass_at.items()
        ],
        ["strategy (asked / resolved)", f"{cfg.strategy if cfg else '?'} / {_resolved(cfg)}"],
        ["model / profile (runner)", _model_profile(cfg)],
        ["per-sample budget", cfg.budget.model_dump_json(exclude_none=True) if cfg else "?"],
        ["retrieval memory", report.memory],
        ["infrastructure failures not re-run (excluded from n)", str(m.infra_errors)],
        ["infrastructure failures re-run", str(m.infra_retried)],
        [
            "interrupted work (orphan events / attempts, not counted)",
            f"{m.orphan_events} / {m.orphan_attempts}",
        ],
        ["runs in this log (1 + resumes)", str(report.starts)],
    ]
    mixed = [
        name
        for name, seen_names in (("models", seen.models), ("strategies", seen.strategies))
        if len(seen_names) > 1
    ]
    if mixed:
        summary.append(["WARNING: mixed run", f"the samples name several {' and '.join(mixed)}"])
    budget = [
        ["samples", _num(m.budget_total.samples), _num(m.budget_per_problem["samples"])],
        [
            "samples × tool calls",
            _num(m.budget_total.samples_x_tool_calls),
            _num(m.budget_per_problem["samples_x_tool_calls"]),
        ],
        [
            "attempts (repairs included)",
            _num(m.budget_total.attempts),
            _num(m.budget_per_problem["attempts"]),
        ],
    ]
    cost = [
        ["total", *_cost_cells(m.cost_total)],
        ["per problem", *_cost_cells(m.cost_per_problem)],
        ["per solved problem", *_cost_cells(m.cost_per_solved)],
    ]
    environment = [
        ["Lean backend of the verdicts (certificates)", _counts(seen.backends)],
        ["Lean version (certificates)", _counts(seen.lean_versions)],
        ["Lean toolchain (certificates)", _counts(seen.toolchains)],
        ["Mathlib commit (certificates)", _counts(seen.mathlib_commits)],
        ["REPL commit (certificates)", _counts(seen.repl_commits)],
        ["checker version", _counts(seen.checker_versions)],
        ["setup-lean lock", str(env.lean_lock) if env and env.lean_lock else "none"],
        ["local Lean probe", (env.lean_backend or "?") if env else "?"],
        ["REPL command", (env.lean_repl_cmd or "default") if env else "?"],
        ["model (outcomes)", _counts(seen.models)],
        ["model (settings)", (env.llm_model or "none") if env else "?"],
        ["profile", _counts(seen.profiles)],
        ["strategy", _counts(seen.strategies)],
        ["gateway", (cfg.api or "in-process runner") if cfg else "?"],
        ["sorryless / python", f"{env.sorryless_version} / {env.python}" if env else "?"],
        ["host", f"{env.hostname} ({env.platform})" if env else "?"],
        [
            "dataset",
            f"{ds.benchmark} {ds.records} records, sha256 {ds.sha256[:16]}…, {ds.origin}" if ds else "?",
        ],
        ["statement provenance", ds.source if ds else "?"],
        ["attempt log sha256", report.log_sha256 or "?"],
    ]
    published = [
        [
            row.published.system,
            row.published.setting or "—",
            f"{row.published.value:g}{'%' if row.published.unit == 'percent' else ' problems'}",
            str(row.published.k) if row.published.k is not None else "n/a",
            row.published.budget,
            row.published.lean or "?",
            "—"
            if row.ours is None
            else (f"{row.ours:.1f}%" if row.published.unit == "percent" else f"{row.ours:.1f} problems"),
            row.ours_definition,
            row.ours_lean,
            row.ours_note + (f"; {row.published.note}" if row.published.note else ""),
        ]
        for row in report.comparison
    ]
    ks = list(m.pass_at)
    categories = [
        [c.tag, str(c.problems), str(c.solved), *[_pct(c.pass_at[k]) for k in ks]] for c in m.categories
    ]
    solved = [
        [s.problem_id, str(s.sample), s.verdict or "?", s.backend or "?", (s.proof_hash or "?")[:16]]
        for s in m.solved_set
    ]
    problems = [
        [
            p.problem_id,
            f"{p.c}/{p.n}",
            *[_pct(p.pass_at[k]) for k in ks],
            str(p.budget.attempts),
            str(p.cost.compile_calls),
            _num(p.cost.tokens),
            f"{p.cost.sample_seconds:.2f}",
            _counts(p.verdicts),
        ]
        for p in m.per_problem
    ]
    return [
        ("Summary", ["metric", "value"], summary),
        ("Budget spent, the anchors' three ways", ["definition", "total", "per problem"], budget),
        ("Cost", ["", "tokens", "LLM calls", "compile calls", "attempts", "wall s"], cost),
        (
            "Against the published numbers (budget definitions and Lean versions differ; see docs/prover.md)",
            [
                "system",
                "setting",
                "published",
                "k",
                "budget definition",
                "Lean",
                "ours",
                "our definition",
                "our Lean",
                "note",
            ],
            published,
        ),
        ("Per category (tags)", ["tag", "problems", "solved", *[f"pass@{k}" for k in ks]], categories),
        ("Environment stamp", ["", "value"], environment),
        (
            "Solved set (first verified sample, certificate)",
            ["problem", "sample", "verdict", "backend", "proof sha256"],
            solved,
        ),
        (
            "Per problem",
            [
                "problem",
                "c/n",
                *[f"pass@{k}" for k in ks],
                "attempts",
                "compile",
                "tokens",
                "wall s",
                "verdicts",
            ],
            problems,
        ),
    ]


PLOT_TITLES = {
    "passk": "pass@k curve",
    "cumulative": "Cumulative solved vs budget",
    "cost": "Cost per problem",
    "categories": "Per-category breakdown",
}


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(report: EvalReport, plot_paths: dict[str, str]) -> str:
    m = report.metrics
    out = [f"# Evaluation report: {m.benchmark} ({m.split or 'all splits'})", ""]
    out.append(f"Generated {report.generated_at.isoformat()} from `{LOG_NAME}` in `{report.run_dir}`.")
    out.append("Every number below is recomputed from the attempt log alone.")
    out.append("")
    warning = incomplete_warning(m)
    if warning:
        out += [f"> **{warning}**", ""]
    for title, header, rows in _tables(report):
        out += [f"## {title}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        out += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows]
        out.append("")
    out.append("## Plots")
    out.append("")
    for name, path in plot_paths.items():
        out += [f"![{PLOT_TITLES[name]}]({path})", ""]
    return "\n".join(out)


_CSS = """
body{font-family:system-ui,sans-serif;margin:2em;max-width:1150px;color:#222}
table{border-collapse:collapse;margin:0.5em 0 1.5em}td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px}
th{background:#f3f3f3}h2{margin-top:1.4em}.plots img{max-width:100%;border:1px solid #eee;margin:6px 0}
"""


def _html_table(title: str, header: list[str], rows: list[list[str]]) -> list[str]:
    esc = html.escape
    out = [f"<h2>{esc(title)}</h2><table><tr>" + "".join(f"<th>{esc(h)}</th>" for h in header) + "</tr>"]
    out += ["<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>" for row in rows]
    out.append("</table>")
    return out


def render_html(report: EvalReport, plots: dict[str, bytes]) -> str:
    m = report.metrics
    esc = html.escape
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>sorryless eval: {esc(str(m.benchmark))}</title><style>{_CSS}</style></head><body>",
        f"<h1>Evaluation report: {esc(str(m.benchmark))} ({esc(m.split or 'all splits')})</h1>",
        f"<p>Generated {esc(report.generated_at.isoformat())} from <code>{LOG_NAME}</code>; "
        "every number is recomputed from the attempt log alone.</p>",
    ]
    warning = incomplete_warning(m)
    if warning:
        parts.append(f"<p id='incomplete' style='color:#a00;font-weight:bold'>{esc(warning)}</p>")
    tables = _tables(report)
    parts += _html_table(*tables[0])
    parts.append("<h2>Plots</h2><div class='plots'>")
    for name, data in plots.items():
        encoded = base64.b64encode(data).decode("ascii")
        parts.append(
            f"<figure><img id='plot-{name}' alt='{esc(PLOT_TITLES[name])}' src='data:image/png;base64,{encoded}'>"
            f"<figcaption>{esc(PLOT_TITLES[name])}</figcaption></figure>"
        )
    parts.append("</div>")
    for table in tables[1:]:
        parts += _html_table(*table)
    parts.append("</body></html>")
    return "\n".join(parts)


def write_report(run_dir: Path, ks: list[int] | None = None) -> EvalReport:
    """Build the report and write report.md, report.html, report.json and plots/*.png into run_dir."""
    report = build_report(run_dir, ks)
    plots = all_plots(report.metrics)
    plot_dir = run_dir / "plots"
    plot_dir.mkdir(exist_ok=True)
    paths: dict[str, str] = {}
    for name, data in plots.items():
        (plot_dir / f"{name}.png").write_bytes(data)
        paths[name] = f"plots/{name}.png"
    (run_dir / "report.md").write_text(render_markdown(report, paths), encoding="utf-8")
    (run_dir / "report.html").write_text(render_html(report, plots), encoding="utf-8")
    (run_dir / "report.json").write_text(report.model_dump_json(indent=2), encoding="utf-8")
    return report
