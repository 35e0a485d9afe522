"""README.md and CONTRIBUTING.md only name things that exist: commands, settings, env vars,
repository paths and gateway routes; README's settings table is what Settings says."""

from __future__ import annotations

import re
from pathlib import Path

import typer.core
import typer.main

from api.app import create_app
from lean_server.app import create_app as create_lean_app
from sorryless.cli import build_app
from sorryless.config import Settings
from sorryless.settings_doc import README_FIELDS, env_var, table_rows

REPO = Path(__file__).resolve().parents[2]
DOCS = ("README.md", "CONTRIBUTING.md")
_CODE = re.compile(r"```[a-z]*\n(.*?)```|`([^`\n]+)`", re.DOTALL)
_REPO_PATH = re.compile(
    r"^(?:api|lean_server|prover|sorryless|tests|docker|scripts|benchmarks|\.ci)/[\w./-]*$"
)


def _code_spans(name: str) -> list[str]:
    text = (REPO / name).read_text(encoding="utf-8")
    return [block or inline for block, inline in _CODE.findall(text)]


def test_readme_settings_table_is_generated_from_settings() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    documented = [line for line in readme.splitlines() if line.startswith("| `SORRYLESS_")]
    assert documented == table_rows(README_FIELDS)


def test_every_env_var_named_in_the_docs_is_read_somewhere() -> None:
    fields = {env_var(name) for name in Settings.model_fields}
    sources = "\n".join(
        path.read_text(encoding="utf-8")
        for folder in ("tests", "scripts", "sorryless", "api", "lean_server", "prover")
        for path in (REPO / folder).rglob("*")
        if path.suffix in (".py", ".sh") and path.is_file()
    )
    for doc in DOCS:
        for var in set(re.findall(r"SORRYLESS_[A-Z0-9_]*[A-Z0-9]", (REPO / doc).read_text(encoding="utf-8"))):
            assert var in fields or var in sources, f"{doc} names {var}, which nothing reads"


def test_every_sorryless_command_in_the_docs_exists() -> None:
    group = typer.main.get_command(build_app())
    assert isinstance(group, typer.core.TyperGroup)
    commands = set(group.commands)
    for doc in DOCS:
        for span in _code_spans(doc):
            for name in re.findall(r"(?:^|[\s/(|])sorryless ([a-z][a-z-]*)", span):
                assert name in commands, f"{doc} uses `sorryless {name}`"


def test_every_repository_path_in_the_docs_exists() -> None:
    checked = 0
    for doc in DOCS:
        for span in _code_spans(doc):
            for word in span.split():
                if _REPO_PATH.match(word):
                    assert (REPO / word).exists(), f"{doc} names {word}"
                    checked += 1
    assert checked >= 5


async def test_every_route_in_the_readme_exists(settings: Settings) -> None:
    gateway = create_app(settings)
    async with gateway.router.lifespan_context(gateway):  # closes the app's clients afterwards
        paths = {*gateway.openapi()["paths"], "/docs"}
    paths |= {getattr(route, "path", "") for route in create_lean_app(settings).routes}
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    named = set(re.findall(r"`(/(?:v1/[\w-]+|api/[\w-]+|verify|health|metrics|docs))`", readme))
    assert {"/v1/jobs", "/health", "/v1/check"} <= named
    assert named <= paths
