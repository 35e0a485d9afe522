"""`sorryless prove FILE.lean`: fill every sorry-ed theorem with a PASS-certified proof.

Exit status: 0 when every sorry-ed theorem was proved, 1 when some remain (they are left as
they were and listed with why), 2 on a usage or infrastructure error: an unknown strategy or
profile, a strategy that needs an LLM when none is configured or the LLM server does not answer
(checked before any work), an unreadable file, or a theorem whose search stopped on an error.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from prover.prove_file import TheoremReport


def register(app: typer.Typer) -> None:
    @app.command("prove")
    def prove(
        file: Annotated[
            Path,
            typer.Argument(help="Lean file with `sorry`-ed theorems/lemmas.", exists=True, dir_okay=False),
        ],
        out: Annotated[
            Path | None,
            typer.Option("--out", "-o", help="Where to write the result (default: FILE in place)."),
        ] = None,
        strategy: Annotated[
            str | None,
            typer.Option(
                help="whole | repair | repair-plain | retrieval | portfolio (comma-separated = in sequence)."
            ),
        ] = None,
        budget: Annotated[
            int | None, typer.Option(help="Attempts per theorem, repairs included.", min=1)
        ] = None,
        repair_rounds: Annotated[int | None, typer.Option(help="Repair rounds per sample.", min=0)] = None,
        profile: Annotated[str | None, typer.Option(help="Model profile (prompt/extraction family).")] = None,
        llm_url: Annotated[str | None, typer.Option(help="OpenAI-compatible base URL (SGLang/vLLM).")] = None,
        model: Annotated[str | None, typer.Option(help="Model name sent to the LLM server.")] = None,
        json_output: Annotated[bool, typer.Option("--json", help="Print a JSON report (with cost).")] = False,
    ) -> None:
        """Fill every `sorry`-ed theorem/lemma of FILE; only PASS-certified proofs are written."""
        import asyncio
        import json

        from rich.console import Console
        from rich.markup import escape

        from prover.prove_file import prove_file
        from prover.types import Budget
        from sorryless.config import Settings
        from sorryless.errors import SorrylessError
        from sorryless.logging import configure_logging

        settings = Settings()
        configure_logging(settings)  # logs to stderr: stdout stays clean for --json
        updates: dict[str, object] = {}
        if llm_url:
            updates["llm_base_url"] = llm_url
        if model:
            updates["llm_model"] = model
        if updates:
            settings = settings.model_copy(update=updates)
        chosen = Budget(max_attempts=budget or settings.prover_default_budget)
        if repair_rounds is not None:
            chosen = chosen.model_copy(update={"max_repair_rounds": repair_rounds})
        err = Console(stderr=True)
        status = err.status("proving…") if not json_output else None

        def on_theorem(name: str, index: int, total: int) -> None:
            if status is not None:
                status.update(f"[{index + 1}/{total}] proving {name}…")

        try:
            if status is not None:
                status.start()
            report = asyncio.run(
                prove_file(
                    settings,
                    file,
                    out=out or file,
                    strategy=strategy,
                    budget=chosen,
                    profile=profile,
                    on_theorem=on_theorem,
                )
            )
        except (SorrylessError, ValueError) as exc:  # prover, LLM and Lean errors
            err.print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True)
            raise typer.Exit(2) from exc
        finally:
            if status is not None:
                status.stop()
        if json_output:
            payload = report.model_dump(mode="json")
            payload["solved"] = report.solved
            payload["unsolved"] = report.unsolved
            typer.echo(json.dumps(payload, indent=2))
        else:
            console = Console()
            for t in report.theorems:
                console.print(_theorem_line(t), soft_wrap=True)
            c = report.cost
            console.print(
                f"{report.solved}/{len(report.theorems)} proved; attempts={c.attempts} compile_calls={c.compile_calls} "
                f"tokens={c.tokens} wall={c.wall_seconds:.1f}s"
                + (f"; written to {escape(report.out)}" if report.out else ""),
                soft_wrap=True,
            )
        if any(t.stopped == "error" for t in report.theorems):
            raise typer.Exit(2)
        if report.unsolved:
            raise typer.Exit(1)


def _theorem_line(t: TheoremReport) -> str:
    """`name (line N): proved` or `left as is (why: the error; last verdict V)` for one theorem."""
    from rich.markup import escape

    head = f"{escape(t.name)} (line {t.line}): "
    if t.solved:
        return f"{head}[green]proved[/green]  attempts={t.attempts}"
    why = [escape(t.stopped + (f": {t.error}" if t.error else ""))]
    if t.verdict:
        why.append(f"last verdict {t.verdict}")
    colour = "red" if t.stopped == "error" else "yellow"
    return f"{head}[{colour}]left as is[/{colour}] ({'; '.join(why)})  attempts={t.attempts}"
