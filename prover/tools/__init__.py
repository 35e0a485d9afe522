"""Tools a model may call while it reasons (tool-integrated reasoning)."""

from __future__ import annotations

from prover.tools.base import Tool

__all__ = ["Tool"]
