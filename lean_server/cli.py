"""``sorryless lean-server`` (the HTTP service) and ``sorryless check FILE.lean``.

Heavy imports (uvicorn, the app, the pool) happen inside the command bodies.
"""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from pathlib import Path
from typing import Annotated

import typer

EXIT_PASS = 0
EXIT_FAIL = 1
EXIT_BAD_INPUT = 2


def register(app: typer.Typer) -> None:
    app.command(
        "lean-server", help="Serve Lean checks over HTTP (/v1/check, Kimina /api/check and /verify)."
    )(lean_server_command)
    app.command("check", help="Check one Lean file and print its verdict (exit 0 on PASS).")(check_command)


def lean_server_command(
    host: Annotated[str | None, typer.Option(help="Bind host (default: settings.lean_server_host).")] = None,
    port: Annotated[int | None, typer.Option(help="Bind port (default: settings.lean_server_port).")] = None,
) -> None:
    import uvicorn

    from lean_server.app import create_app
    from sorryless.config import Settings
    from sorryless.logging import configure_logging

    settings = Settings()
    configure_logging(settings)
    uvicorn.run(
        create_app(settings),
        host=host or settings.lean_server_host,
        port=port if port is not None else settings.lean_server_port,
        loop="uvloop" if importlib.util.find_spec("uvloop") else "asyncio",
        http="httptools" if importlib.util.find_spec("httptools") else "h11",
        access_log=False,
        log_level="warning",
        workers=1,
        timeout_graceful_shutdown=10,
    )


def check_command(
    file: Annotated[Path, typer.Argument(help="The Lean file to check (header + body).")],
    json_output: Annotated[bool, typer.Option("--json", help="Print the certificate as JSON.")] = False,
    stub: Annotated[
        Path | None,
        typer.Option(help="The sorry-stub file this proof must prove (statement + legality tiers)."),
    ] = None,
    policy: Annotated[
        str | None, typer.Option(help="Policy preset: strict (default), sketch, lenient.")
    ] = None,
) -> None:
    code = _read_text(file)
    stub_text = _read_text(stub) if stub is not None else None
    if not code.strip():
        typer.echo(f"error: {file} is empty", err=True)
        raise typer.Exit(EXIT_BAD_INPUT)
    _check_policy(policy)
    raise typer.Exit(asyncio.run(_check(file, code, stub_text, policy, json_output)))


def _check_policy(policy: str | None) -> None:
    from lean_server.policy import resolve_policy

    try:
        resolve_policy(policy)
    except ValueError as exc:
        typer.echo(f"error: invalid --policy: {exc}", err=True)
        raise typer.Exit(EXIT_BAD_INPUT) from None


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        typer.echo(f"error: cannot read {path}: {exc}", err=True)
        raise typer.Exit(EXIT_BAD_INPUT) from None


async def _check(file: Path, code: str, stub: str | None, policy: str | None, json_output: bool) -> int:
    from lean_server.checker import LeanError, Snippet, check_one
    from lean_server.connect import connect
    from sorryless.config import Settings
    from sorryless.logging import configure_logging

    settings = Settings()
    configure_logging(settings)  # logs go to stderr: stdout carries only the verdict / certificate
    try:
        snippet = Snippet(id=file.name, code=code, stub=stub, policy=policy)
    except ValueError as exc:
        typer.echo(f"error: {exc}", err=True)
        return EXIT_BAD_INPUT
    checker = connect(settings)
    try:
        start = getattr(checker, "start", None)
        if start is not None:
            await start()
        cert = await check_one(checker, snippet)
    except LeanError as exc:
        typer.echo(f"error: {type(exc).__name__}: {exc}", err=True)
        return EXIT_FAIL
    finally:
        await checker.aclose()
    if json_output:
        sys.stdout.write(cert.model_dump_json(indent=2) + "\n")
    else:
        typer.echo(f"{file}: {cert.verdict.value}")
        for reason in cert.reasons:
            typer.echo(f"  - {reason}")
    return EXIT_PASS if cert.passed else EXIT_FAIL
