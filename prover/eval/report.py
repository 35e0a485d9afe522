"""`eval-report`: every metric recomputed from the attempt log, written as Markdown, HTML and JSON.

The HTML is self-contained (plots embedded as base64 PNG); the Markdown links the same plots
saved under ``plots/``. Published numbers are shown with their budget definitions and Lean
versions next to ours, and the environment stamp says which Lean backend produced our verdicts.
"""

from __future__ import annotations

import base64
import html
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, Field

from prover.eval.datasets import DatasetVersion
from prover.eval.errors import EvalError
from prover.eval.metrics import CostSummary, RunMetrics, compute_metrics
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
    ours: float | None = Field(default=None, description="Our number in the published row's unit, at its k.")
    ours_note: str = ""


class EvalReport(BaseModel):
    run_dir: str
    generated_at: datetime
    log_sha256: str | None
    config: RunConfig | None
    dataset: DatasetVersion | None
    environment: EnvironmentInfo | None
    starts: int = Field(description="Run lines in the log: 1 + number of resumes.")
    metrics: RunMetrics
    comparison: list[ComparisonRow]


def _ours(metrics: RunMetrics, row: PublishedResult) -> tuple[float | None, str]:
    if row.k is None:
        return None, "budget not stated"
    if metrics.problems == 0:
        return None, "no problems"
    if metrics.n_min < row.k:
        return None, f"needs n >= {row.k} (run has n = {metrics.n_min})"
    mean = sum(pass_at_k(p.n, p.c, row.k) for p in metrics.per_problem) / metrics.problems
    caveat = (
        "" if metrics.split in (None, row.split) else f"; ours on {metrics.split}, published on {row.split}"
    )
    if row.unit == "problems":
        return mean * metrics.problems, f"expected problems solved of {metrics.problems}{caveat}"
    return 100 * mean, f"pass@{row.k} over {metrics.problems} problems{caveat}"


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
    comparison = [
        ComparisonRow(published=row, ours=value, ours_note=note)
        for row in published_for(metrics.benchmark or "")
        for value, note in [_ours(metrics, row)]
    ]
    return EvalReport(
        run_dir=str(run_dir),
        generated_at=utcnow(),
        log_sha256=file_sha256_or_none(log_path),
        config=last.config if last else None,
        dataset=last.dataset if last else None,
        environment=last.environment if last else None,
        starts=len(runs),
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


def _tables(report: EvalReport) -> list[tuple[str, list[str], list[list[str]]]]:
    """(title, header, rows) of every table, shared by Markdown and HTML."""
    m = report.metrics
    env = report.environment
    seen = m.environment_seen
    cfg = report.config
    ds = report.dataset
    summary = [
        ["benchmark / split", f"{m.benchmark} / {m.split or 'all'}"],
        ["problems (solved)", f"{m.problems} ({m.solved})"],
        ["samples per problem (n)", f"{m.n_min}" if m.n_min == m.n_max else f"{m.n_min}–{m.n_max}"],
        *[[f"pass@{k} (unbiased)", _pct(v)] for k, v in m.pass_at.items()],
        ["strategy / profile", f"{cfg.strategy if cfg else '?'} / {cfg.profile if cfg else '?'}"],
        ["per-sample budget", cfg.budget.model_dump_json(exclude_none=True) if cfg else "?"],
        ["retrieval memory", ("on" if cfg.memory else "off (independent samples)") if cfg else "?"],
        ["infrastructure failures", str(m.infra_errors)],
        ["interrupted work (orphan events)", str(m.orphan_events)],
        ["runs in this log (1 + resumes)", str(report.starts)],
    ]
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
            "Against the published numbers (budget definitions and Lean versions differ; see prover.md §(c))",
            ["system", "setting", "published", "k", "budget", "Lean", "ours", "note"],
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
