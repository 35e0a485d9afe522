"""The ``SORRYLESS_*`` environment variables as a Markdown table, made from :class:`Settings`.

``python -m sorryless.settings_doc`` prints every variable; README.md shows the rows of
:data:`README_FIELDS`, and a test keeps those rows equal to what this module makes.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from pydantic_core import PydanticUndefined

from sorryless.config import Settings

# The variables worth knowing first, in the order README.md lists them.
README_FIELDS: tuple[str, ...] = (
    "redis_url",
    "redis_key_prefix",
    "data_dir",
    "log_level",
    "log_json",
    "lean_toolchain",
    "mathlib_rev",
    "repl_rev",
    "lean_project",
    "lean_repl_cmd",
    "lean_bin",
    "lean_server_url",
    "lean_max_processes",
    "lean_memory_limit_mb",
    "lean_check_timeout_s",
    "llm_base_url",
    "llm_model",
    "llm_api_key",
    "llm_profile",
    "prover_default_strategy",
    "prover_default_budget",
    "api_host",
    "api_port",
    "admin_key",
    "auth_required",
    "worker_concurrency",
    "job_timeout_s",
    "benchmarks_dir",
)
_FACTORY_DEFAULTS = {"data_dir": "`$XDG_DATA_HOME/sorryless` or `~/.local/share/sorryless`"}


def env_var(field: str) -> str:
    prefix = Settings.model_config.get("env_prefix", "")
    return f"{prefix}{field}".upper()


def _default(field: str) -> str:
    info = Settings.model_fields[field]
    if field in _FACTORY_DEFAULTS:
        return _FACTORY_DEFAULTS[field]
    if info.default is PydanticUndefined:
        return "`[]`" if info.default_factory is list else "(computed)"
    if info.default is None:
        return "unset"
    if isinstance(info.default, bool):
        return f"`{str(info.default).lower()}`"
    return f"`{info.default}`"


def _cell(text: str) -> str:
    """One table cell: one line, ``|`` escaped, ``<`` escaped outside code spans (not an HTML tag)."""
    parts = " ".join(text.split()).replace("|", "\\|").split("`")
    return "`".join(part if i % 2 else part.replace("<", "&lt;") for i, part in enumerate(parts))


def table_rows(fields: Sequence[str]) -> list[str]:
    """One Markdown table row per field: variable, default, description."""
    rows = []
    for field in fields:
        description = Settings.model_fields[field].description or ""
        rows.append(f"| `{env_var(field)}` | {_cell(_default(field))} | {_cell(description)} |")
    return rows


def table(fields: Sequence[str]) -> str:
    return "\n".join(["| variable | default | what it sets |", "|---|---|---|", *table_rows(fields)])


def main(argv: Sequence[str] | None = None) -> None:
    """Print the table of every field (``--readme``: only README's rows)."""
    args = sys.argv[1:] if argv is None else list(argv)
    fields = README_FIELDS if "--readme" in args else tuple(Settings.model_fields)
    print(table(fields))


if __name__ == "__main__":
    main()
