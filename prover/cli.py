"""`sorryless prove FILE.lean`: fill every sorry-ed theorem with a PASS-certified proof.

Exit status: 0 when every sorry-ed theorem was proved, 1 when some remain (they are left as
they were and listed), 2 on a usage or infrastructure error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


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
            err.print(f"[red]error:[/red] {exc}")
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
                mark = "[green]proved[/green]" if t.solved else f"[yellow]left as is[/yellow] ({t.stopped}"
                mark += "" if t.solved else (f", last verdict {t.verdict})" if t.verdict else ")")
                console.print(f"{t.name} (line {t.line}): {mark}  attempts={t.attempts}")
            c = report.cost
            console.print(
                f"{report.solved}/{len(report.theorems)} proved; attempts={c.attempts} compile_calls={c.compile_calls} "
                f"tokens={c.tokens} wall={c.wall_seconds:.1f}s"
                + (f"; written to {report.out}" if report.out else "")
            )
        if report.unsolved:
            raise typer.Exit(1)
