"""The seam between a model's tool calls and what answers them.

A :class:`Tool` is what a model may call while it reasons (tool-integrated reasoning): it has a
name, a description and the JSON schema of its arguments (what OpenAI ``tools`` and LongCat's
tool declaration both carry), and it answers a call with a JSON object in LongCat's result shape.
Tools run inside a strategy's :class:`~prover.strategies.base.Context`, so every call is judged,
counted and reported like any other check.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from prover.strategies.base import Context


class Tool(Protocol):
    """One callable tool: ``run`` answers one call with a JSON-serialisable result."""

    @property
    def name(self) -> str:
        """The function name the model calls (``lean4_compiler``, ``syntax_check``...)."""
        ...

    @property
    def description(self) -> str:
        """One paragraph telling the model what the tool does."""
        ...

    @property
    def parameters(self) -> Mapping[str, Any]:
        """JSON schema of the arguments (an ``object`` with string properties)."""
        ...

    async def run(self, arguments: Mapping[str, str], ctx: Context) -> dict[str, Any]:
        """Answer one call; never raises for a bad argument (the result says what was wrong)."""
        ...
