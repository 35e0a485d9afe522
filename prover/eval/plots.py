"""Report plots as PNG bytes (matplotlib's Agg canvas, no display, no pyplot state)."""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")

from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from prover.eval.metrics import RunMetrics
from prover.eval.passk import pass_at_k

_DPI = 100


def _png(fig: Figure) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=_DPI, bbox_inches="tight")
    return buffer.getvalue()


def passk_curve(metrics: RunMetrics) -> bytes:
    """Mean unbiased pass@k for every k from 1 to the smallest n."""
    fig = Figure(figsize=(6, 4))
    ax = fig.add_subplot()
    ks = list(range(1, metrics.n_min + 1))
    problems = metrics.per_problem
    values = (
        [100 * sum(pass_at_k(p.n, p.c, k) for p in problems) / len(problems) for k in ks] if problems else []
    )
    ax.plot(ks, values, marker="o")
    for k in metrics.ks:
        if k in ks:
            ax.annotate(
                f"{values[k - 1]:.1f}%", (k, values[k - 1]), textcoords="offset points", xytext=(4, 6)
            )
    if len(ks) > 8:
        ax.set_xscale("log", base=2)
    else:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("k (samples)")
    ax.set_ylabel("pass@k (%)")
    ax.set_ylim(0, 100)
    ax.set_title("Unbiased pass@k")
    ax.grid(True, alpha=0.3)
    return _png(fig)


def cumulative_solved(metrics: RunMetrics) -> bytes:
    """Problems solved within a per-problem budget, counted in attempts and in samples."""
    fig = Figure(figsize=(6, 4))
    ax = fig.add_subplot()
    for points, label in (
        (metrics.cumulative_solved_by_attempts, "attempts (repairs included)"),
        (metrics.cumulative_solved_by_samples, "samples"),
    ):
        xs = [0] + [x for x, _ in points]
        ys = [0] + [y for _, y in points]
        ax.step(xs, ys, where="post", label=label)
    ax.axhline(metrics.problems, color="grey", linestyle=":", label=f"{metrics.problems} problems")
    ax.set_xlabel("budget per problem")
    ax.set_ylabel("problems solved")
    ax.set_title("Cumulative solved vs budget")
    ax.legend(loc="lower right")
    ax.grid(True, alpha=0.3)
    return _png(fig)


def cost_histogram(metrics: RunMetrics) -> bytes:
    """Per-problem tokens, compile calls and wall seconds."""
    fig = Figure(figsize=(9, 3.2))
    series: list[tuple[str, list[float]]] = [
        ("tokens", [float(p.cost.tokens) for p in metrics.per_problem]),
        ("compile calls", [float(p.cost.compile_calls) for p in metrics.per_problem]),
        ("wall seconds", [p.cost.sample_seconds for p in metrics.per_problem]),
    ]
    for index, (label, values) in enumerate(series, 1):
        ax = fig.add_subplot(1, 3, index)
        ax.hist(values or [0], bins=min(20, max(1, len(values))), color=f"C{index}")
        ax.set_title(f"{label} / problem", fontsize=10)
        ax.set_ylabel("problems")
    fig.tight_layout()
    return _png(fig)


def categories(metrics: RunMetrics) -> bytes:
    """Solved / problems per tag."""
    cats = metrics.categories[:25]
    fig = Figure(figsize=(6, max(2.5, 0.35 * len(cats) + 1)))
    ax = fig.add_subplot()
    labels = [c.tag for c in cats]
    ax.barh(labels, [c.problems for c in cats], color="lightgrey", label="problems")
    ax.barh(labels, [c.solved for c in cats], color="C2", label="solved")
    ax.invert_yaxis()
    ax.set_xlabel("problems")
    ax.set_title("Per-category breakdown (tags)")
    ax.legend(loc="lower right")
    return _png(fig)


def all_plots(metrics: RunMetrics) -> dict[str, bytes]:
    return {
        "passk": passk_curve(metrics),
        "cumulative": cumulative_solved(metrics),
        "cost": cost_histogram(metrics),
        "categories": categories(metrics),
    }
